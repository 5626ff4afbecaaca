#!/bin/sh
# Assembles the runtime image's whole filesystem, run by the Containerfile's build stage:
#   scripts/image-rootfs.sh BINDIR ROOTFS
# ROOTFS gets BINDIR/vipd and BINDIR/vipctl in /usr/local/bin, every shared library `ldd` says
# they load (the dynamic loader included) under its soname, vipd's LICENSE and the Debian
# copyright file of each library's package (the licences of what the image redistributes). Nothing else: no shell, no
# package manager, no /etc. The libraries come from this build stage, which installed them as
# dependencies of the -dev packages vipd was built against, so the image holds exactly the
# versions vipd was linked with.
# The list is derived, never written down: a new dependency lands in the image by itself, and
# tests/manifests/test_container_libs.py checks the built image against ldd.
set -eu
bindir=$1
rootfs=$2

mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/lib" "$rootfs/usr/lib64"
# Debian 12 is merged-/usr: ldd and PT_INTERP name /lib and /lib64 paths, which are symlinks.
ln -sfn usr/lib "$rootfs/lib"
ln -sfn usr/lib64 "$rootfs/lib64"

for binary in vipd vipctl; do
  install -m 0755 "$bindir/$binary" "$rootfs/usr/local/bin/$binary"
done
install -D -m 0644 "$(dirname "$0")/../LICENSE" "$rootfs/usr/share/doc/vipd/LICENSE"

# `ldd` lines: "libfmt.so.9 => /lib/x86_64-linux-gnu/libfmt.so.9 (0x...)" and the loader
# "/lib64/ld-linux-x86-64.so.2 (0x...)"; a static vipctl has none ("not a dynamic executable").
libraries=$(for binary in vipd vipctl; do
  ldd "$bindir/$binary" 2>/dev/null || true
done | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
if [ -z "$libraries" ]; then
  echo "image-rootfs: ldd found no libraries for $bindir/vipd" >&2
  exit 1
fi
if ldd "$bindir/vipd" | grep -q 'not found'; then
  echo "image-rootfs: vipd needs a library this stage does not have:" >&2
  ldd "$bindir/vipd" >&2
  exit 1
fi

for path in $libraries; do
  # Keep the name the loader asks for (the soname), in the directory it resolves to.
  dir=$(readlink -f "$(dirname "$path")")
  mkdir -p "$rootfs$dir"
  cp -L "$path" "$rootfs$dir/$(basename "$path")"
  package=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null) || {
    echo "image-rootfs: no Debian package owns $path" >&2
    exit 1
  }
  package=${package%%:*}
  mkdir -p "$rootfs/usr/share/doc/$package"
  cp "/usr/share/doc/$package/copyright" "$rootfs/usr/share/doc/$package/copyright"
done
