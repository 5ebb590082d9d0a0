# shellcheck shell=bash
# Fresh Debian 12 roots for the checks that need a machine nothing was installed on
# (scripts/check-fresh-debian.sh, scripts/check-deb.sh). Sourced, not run:
#
#   . scripts/debian-root.sh
#   debian_root_new ROOT          # ROOT: a copy of a pristine Debian 12 minbase root
#   debian_root_mount ROOT        # /proc, /sys, /dev, /dev/pts bound, the host's resolv.conf
#   debian_root_bind SRC DST [ro] # another bind mount, undone with the others
#   debian_root_chroot ROOT CMD   # CMD in bash in ROOT, with a clean environment, as root
#   debian_root_cleanup           # unmounts what was mounted, last first (call it from a trap)
#
# The pristine root is made once with debootstrap (minbase, bookworm, from deb.debian.org; about a
# minute) and kept at $HERALD_DEBIAN_MINBASE (default /var/tmp/herald-debian12-minbase); it is only
# ever copied, never used, so every root made from it is as fresh as a new debootstrap.
HERALD_DEBIAN_MINBASE=${HERALD_DEBIAN_MINBASE:-/var/tmp/herald-debian12-minbase}
HERALD_DEBIAN_MIRROR=${HERALD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian_root_mounts=()

debian_root_new() { # debian_root_new ROOT
    local root=$1
    if [ ! -x "$HERALD_DEBIAN_MINBASE/bin/bash" ]; then
        rm -rf "$HERALD_DEBIAN_MINBASE.partial"
        debootstrap --variant=minbase bookworm "$HERALD_DEBIAN_MINBASE.partial" "$HERALD_DEBIAN_MIRROR" >&2
        rm -rf "$HERALD_DEBIAN_MINBASE"
        mv "$HERALD_DEBIAN_MINBASE.partial" "$HERALD_DEBIAN_MINBASE"
    fi
    mkdir -p "$root"
    cp -a "$HERALD_DEBIAN_MINBASE/." "$root/"
}

debian_root_bind() { # debian_root_bind SOURCE TARGET [ro]
    mkdir -p "$2"
    mount --bind "$1" "$2"
    debian_root_mounts+=("$2")
    if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

debian_root_mount() { # debian_root_mount ROOT
    local root=$1
    debian_root_bind /proc "$root/proc"
    debian_root_bind /sys "$root/sys"
    debian_root_bind /dev "$root/dev"
    debian_root_bind /dev/pts "$root/dev/pts"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
}

debian_root_chroot() { # debian_root_chroot ROOT COMMAND
    chroot "$1" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive /bin/bash -euo pipefail -c "$2"
}

debian_root_cleanup() {
    local i
    for ((i = ${#debian_root_mounts[@]} - 1; i >= 0; i--)); do
        umount -l "${debian_root_mounts[$i]}" 2>/dev/null || true
    done
    debian_root_mounts=()
}
