#!/usr/bin/env bash
# Proves that scripts/install-deps.sh and the build work on a machine that has nothing installed:
# a minimal Debian bookworm made by debootstrap, in a chroot.
#
#   sudo scripts/check-fresh-debian.sh [--gui-only] [--ref REF] CHROOT_DIR
#
# Default: runs the whole of scripts/test.sh in the chroot (install, build everything with warnings
# as errors, every test). --gui-only: install-deps.sh, configure with the default options, build
# trainplan-gui and its tests and run the tests labelled 'gui' (QT_QPA_PLATFORM=offscreen) — the
# part that a missing package used to drop without a word.
#
# Layout under CHROOT_DIR (keep it out of the repository):
#   base/       debootstrap --variant=minbase bookworm, made once and never changed
#   apt-cache/  downloaded .deb files, kept between runs so reruns do not download again
#   root/       a fresh copy of base/ for each run; the run happens here
# Each run starts again from base/, so install-deps.sh always meets a pristine system, and running
# the script twice gives the same answer. Remove CHROOT_DIR to start from a new debootstrap.
#
# The repository goes in as `git archive REF` (default HEAD: committed files only) at
# /src/trainplan, and nothing else: a user's clone has nothing beside it, so the build and the
# tests must need no file outside the repository (ctest's style.repo_paths checks it too). There
# is no CUDA in the chroot, so trainplan-calibrate is left out there (TRAINPLAN_REQUIRE_CUDA OFF).
#
# Environment: MIRROR (default: the .../debian URI in /etc/apt/sources.list*), SECURITY_MIRROR
# (default: the .../debian-security URI there), JOBS (default: nproc).
# Needs root (debootstrap, chroot, mount) and the debootstrap package.
set -euo pipefail

usage() {
  echo "usage: $0 [--gui-only] [--ref REF] CHROOT_DIR" >&2
  exit 2
}
die() {
  echo "check-fresh-debian: $*" >&2
  exit 2
}

# The mirrors this machine already uses, so the chroot needs no other network access.
apt_sources() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    2>/dev/null || true
}
first_uri_ending_in() {
  apt_sources | grep -oE "https?://[^ ]+/$1/?( |\$)" | head -n1 | tr -d ' '
}

mounts=()
unmount_all() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}" 2>/dev/null || true
  done
  mounts=()
}
bind() {
  mount "$@" && mounts+=("${!#}")
}
# Refuses to delete a tree that still has something mounted in it (a run killed before its trap).
assert_nothing_mounted() {
  if grep -q " $1[/ ]" /proc/self/mounts; then
    grep " $1[/ ]" /proc/self/mounts >&2
    die "something is still mounted under $1; unmount it first"
  fi
}

main() {
  local mode=full ref=HEAD dir=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --gui-only) mode=gui ;;
      --ref) [ $# -ge 2 ] || usage; ref=$2; shift ;;
      -h | --help) usage ;;
      -*) echo "unknown option: $1" >&2; usage ;;
      *) [ -z "$dir" ] || usage; dir=$1 ;;
    esac
    shift
  done
  [ -n "$dir" ] || usage

  local repo
  repo=$(cd "$(dirname "$0")/.." && pwd)
  [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount); run it with sudo"
  command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
  git -C "$repo" rev-parse --verify -q "$ref^{commit}" >/dev/null || die "no commit $ref"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  case "$dir/" in
    "$repo"/*) die "$dir is inside the repository; pick a folder outside it" ;;
  esac

  local mirror security jobs
  mirror=${MIRROR:-$(first_uri_ending_in debian)}
  mirror=${mirror:-http://deb.debian.org/debian}
  security=${SECURITY_MIRROR:-$(first_uri_ending_in debian-security)}
  jobs=${JOBS:-$(nproc)}

  local start
  start=$(date +%s)
  say() {
    local s=$(($(date +%s) - start))
    printf 'check-fresh-debian [%dm%02ds]: %s\n' $((s / 60)) $((s % 60)) "$*"
  }

  local base=$dir/base root=$dir/root cache=$dir/apt-cache
  if [ ! -e "$base/.trainplan-base-complete" ]; then
    assert_nothing_mounted "$base"
    rm -rf "$base"
    say "debootstrap bookworm (minbase) from $mirror into $base"
    debootstrap --variant=minbase bookworm "$base" "$mirror"
    {
      echo "deb $mirror bookworm main"
      echo "deb $mirror bookworm-updates main"
      [ -z "$security" ] || echo "deb $security bookworm-security main"
    } >"$base/etc/apt/sources.list"
    rm -f "$base/var/cache/apt/archives/"*.deb
    touch "$base/.trainplan-base-complete"
  else
    say "reusing the pristine base $base"
  fi

  assert_nothing_mounted "$root"
  rm -rf "$root"
  say "fresh root $root from the base"
  cp -a "$base" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"

  mkdir -p "$root/src/trainplan" "$cache/partial"
  git -C "$repo" archive "$ref" | tar -x -C "$root/src/trainplan"
  say "repository at $ref ($(git -C "$repo" rev-parse --short "$ref")) copied to /src/trainplan"

  trap unmount_all EXIT
  bind -t proc proc "$root/proc"
  bind --bind /dev "$root/dev"
  bind --bind /dev/pts "$root/dev/pts"
  bind --bind "$cache" "$root/var/cache/apt/archives"

  local script
  case "$mode" in
    full)
      say "scripts/test.sh in the chroot"
      script='cd /src/trainplan && nice -n 10 scripts/test.sh'
      ;;
    gui)
      say "install-deps.sh, configure, build and test the GUI in the chroot"
      script='
        cd /src/trainplan
        scripts/install-deps.sh
        nice -n 10 cmake -S . -B build-fresh -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DTRAINPLAN_WERROR=ON
        nice -n 10 cmake --build build-fresh -j "$JOBS" \
          --target trainplan-gui tst_gui_models tst_gui_window
        test -x build-fresh/gui/trainplan-gui
        cd build-fresh
        n=$(ctest -N -L gui | sed -n "s/^Total Tests: //p")
        echo "gui tests registered: ${n:-0}"
        [ "${n:-0}" -gt 0 ]
        export XDG_RUNTIME_DIR=$(mktemp -d)
        QT_QPA_PLATFORM=offscreen ctest -L gui --output-on-failure --timeout 600'
      ;;
  esac
  local status=0
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    JOBS="$jobs" /bin/bash -euo pipefail -c "$script" || status=$?

  unmount_all
  if [ "$status" -eq 0 ]; then
    say "PASS ($mode) on a fresh Debian bookworm"
  else
    say "FAIL ($mode, exit $status) on a fresh Debian bookworm"
  fi
  return "$status"
}

main "$@"
