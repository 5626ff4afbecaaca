#!/bin/sh
# Assembles the runtime image's whole filesystem, run by the Containerfile's build stage:
#   scripts/image-rootfs.sh BINDIR ROOTFS
# ROOTFS gets BINDIR/vipd and BINDIR/vipctl in /usr/local/bin, every shared library they load
# (the dynamic loader included) under its soname, vipd's LICENSE, the Debian copyright file of
# each library's package (the licences of what the image redistributes) and that package's
# dpkg record in /var/lib/dpkg/status.d/ (the layout distroless images use, which SBOM tools and
# vulnerability scanners read: without it they see no package in a scratch image), and
# /etc/os-release and /etc/debian_version. Nothing else: no shell, no package manager. The
# libraries come from this build stage, which installed them as
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
# The distribution the libraries come from (Debian 12): SBOM tools and scanners read the dpkg
# records below only once they know it (Trivy, which cdxgen runs, from /etc/debian_version).
install -D -m 0644 "$(readlink -f /etc/os-release)" "$rootfs/etc/os-release"
install -m 0644 /etc/debian_version "$rootfs/etc/debian_version"

# The libraries, found the way the dynamic loader finds them: the program interpreter and each
# DT_NEEDED entry, recursively, in the binary's own architecture's directories. Not ldd, which
# runs the loader and so cannot look into a cross-compiled (arm64) binary. A static vipctl has
# neither.
elf_field() {  # elf_field FILE: the interpreter, then the NEEDED sonames, one per line
  readelf -l "$1" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
  readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}
case $(readelf -h "$bindir/vipd" | sed -n 's/^ *Machine: *//p') in
  AArch64) triplet=aarch64-linux-gnu ;;
  *X86-64) triplet=x86_64-linux-gnu ;;
  *) echo "image-rootfs: $bindir/vipd is for a machine this script does not know" >&2; exit 1 ;;
esac
libraries=
sonames=  # each library once: libc's NEEDED names the loader that PT_INTERP already brought in
queue="$bindir/vipd $bindir/vipctl"
while [ -n "$queue" ]; do
  set -- $queue
  file=$1
  shift
  queue="$*"
  for name in $(elf_field "$file"); do
    case " $sonames " in
      *" ${name##*/} "*) continue ;;
    esac
    sonames="$sonames ${name##*/}"
    path=
    case $name in
      /*) path=$name ;;
      *) for dir in "/lib/$triplet" "/usr/lib/$triplet" /lib /usr/lib; do
           if [ -e "$dir/$name" ]; then path=$dir/$name; break; fi
         done ;;
    esac
    if [ -z "$path" ] || [ ! -e "$path" ]; then
      echo "image-rootfs: $file needs $name, which this stage does not have ($triplet)" >&2
      exit 1
    fi
    libraries="$libraries $path"
    queue="$queue $path"
  done
done
if [ -z "$libraries" ]; then
  echo "image-rootfs: found no libraries for $bindir/vipd" >&2
  exit 1
fi

# dpkg-query's fields for a record (a dpkg status paragraph).
record_format='Package: ${Package}\nStatus: ${Status}\nSource: ${Source}\nVersion: ${Version}
Architecture: ${Architecture}\nMaintainer: ${Maintainer}\nHomepage: ${Homepage}
Description: ${binary:Summary}\n'
for path in $libraries; do
  # Keep the name the loader asks for (the soname), in the directory it resolves to.
  dir=$(readlink -f "$(dirname "$path")")
  mkdir -p "$rootfs$dir"
  cp -L "$path" "$rootfs$dir/$(basename "$path")"
  package=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null) || {
    echo "image-rootfs: no Debian package owns $path" >&2
    exit 1
  }
  # "libfmt9:arm64: /usr/lib/aarch64-linux-gnu/libfmt.so.9": the package with its
  # architecture, which picks the right record where the build machine's is installed too.
  package_arch=${package%%: *}
  package=${package%%:*}
  mkdir -p "$rootfs/usr/share/doc/$package" "$rootfs/var/lib/dpkg/status.d"
  cp "/usr/share/doc/$package/copyright" "$rootfs/usr/share/doc/$package/copyright"
  # The package's record for the image's architecture (name, version, source, architecture):
  # what an SBOM lists for it.
  dpkg-query -W -f="$record_format" "$package_arch" >"$rootfs/var/lib/dpkg/status.d/$package"
done
