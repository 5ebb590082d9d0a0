#!/usr/bin/env bash
# Runs `make test` on a clean clone of this checkout's HEAD inside a fresh Debian 12 root made with
# debootstrap: what a new machine has, plus only what the README assumes a developer brings (git,
# make, and the Swift toolchain with the libraries swift.org lists for Debian 12). Everything else
# (libsodium, PostgreSQL, python3-venv, the Python packages, …) must come from the Makefile.
#
#   scripts/check-fresh-debian.sh [ROOT]        (as root; ROOT defaults to /var/tmp/herald-debian12)
#
# The toolchain (/opt/swift) and this machine's package mirror (/opt/swift-packages, named by
# /etc/gitconfig) are bind-mounted read-only; network settings are copied from the host.
set -euo pipefail
root=${1:-/var/tmp/herald-debian12}
swift_dir=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
toolchain_deps="binutils gcc git make libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libncurses-dev \
libpython3-dev libsqlite3-0 libstdc++-12-dev libxml2-dev libz3-dev pkg-config tzdata unzip uuid-dev zlib1g-dev \
ca-certificates"

# shellcheck source=scripts/debian-root.sh
. "$(dirname "$0")/debian-root.sh"
# A root left by an earlier run is reused (its toolchain packages are installed already).
[ -x "$root/bin/bash" ] || debian_root_new "$root"

trap debian_root_cleanup EXIT
debian_root_mount "$root"
debian_root_bind "$swift_dir" "$root$swift_dir" ro
[ -d /opt/swift-packages ] && debian_root_bind /opt/swift-packages "$root/opt/swift-packages" ro
[ -d /opt/wheels ] && debian_root_bind /opt/wheels "$root/opt/wheels" ro
[ -f /etc/gitconfig ] && cp /etc/gitconfig "$root/etc/gitconfig"
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"

chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    /bin/bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $toolchain_deps >/dev/null"
# The host's CA bundle, in case this machine reaches PyPI through a proxy with its own CA.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"

rm -rf "$root/root/herald"
git clone -q "$(git rev-parse --show-toplevel)" "$root/root/herald"
echo "make test in $root on $(git rev-parse --short HEAD), $(date -u +%H:%M:%S)"
chroot "$root" /usr/bin/env -i HOME=/root PATH="$swift_dir/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin" LANG=C.UTF-8 \
    /bin/bash -c "cd /root/herald && make test"
echo "make test passed in a fresh Debian 12 root, $(date -u +%H:%M:%S)"
