#!/bin/sh
# Prints vipd's version, the one string that `vipd --version`, `vipctl --version`, the
# vipd_build_info metric, the image tag and `vipd render`'s default image all carry.
#   scripts/version.sh [PROJECT_VERSION [OVERRIDE]]
# - PROJECT_VERSION: meson's project version (meson passes it; empty: read from meson.build).
# - OVERRIDE, when not empty: a build without the git history (the Containerfile's build stage
#   gets the version the host computed, as a build argument).
# - git describe against the release tags (v0.2.0 -> 0.2.0; 3 commits later 0.2.0-3-gabc1234;
#   -dirty with uncommitted changes to tracked files).
# - a git checkout without a release tag: PROJECT_VERSION-gabc1234[-dirty].
# - no git at all (a source tarball): PROJECT_VERSION.
# Each form is a valid image tag ([A-Za-z0-9_.-], at most 128 characters).
set -eu
project_version=${1:-}
override=${2:-}
if [ -n "$override" ]; then
  echo "$override"
  exit 0
fi
cd "$(dirname "$0")/.."
if [ -z "$project_version" ]; then
  project_version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -n 1)
fi
if command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
  if described=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
    echo "${described#v}"
    exit 0
  fi
  if hash=$(git rev-parse --short=7 HEAD 2>/dev/null); then
    dirty=
    git diff --quiet HEAD -- 2>/dev/null || dirty=-dirty
    echo "$project_version-g$hash$dirty"
    exit 0
  fi
fi
echo "$project_version"
