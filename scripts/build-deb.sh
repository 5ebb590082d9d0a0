#!/usr/bin/env bash
# Builds herald_<version>_amd64.deb from a built herald (`make deb` builds one first):
#
#   scripts/build-deb.sh BINARY [OUTDIR]     (OUTDIR defaults to .; prints the .deb's path last)
#   scripts/build-deb.sh --unit FILE         (writes only the packaged unit, for check-deploy.sh)
#
# HERALD_DEB_COMPRESS: dpkg-deb's compression flags (default -Zxz; the tests use -Zgzip -z1).
#
# What goes in: /usr/bin/herald (debug info stripped); /lib/systemd/system/herald.service,
# deploy/herald.service with /usr/bin/herald and the herald user (User=, Group=) in place of
# /usr/local/bin/herald and DynamicUser=; /etc/herald/herald.yaml (deploy/herald.yaml, a conffile,
# 0600 in a 0700 /etc/herald); README.Debian, docs and the alert rules under /usr/share/doc/herald;
# the maintainer scripts of deploy/debian (the herald user, /var/lib/herald).
#
# The version is the binary's own (`herald --version`, HeraldVersion.current). Depends: is what
# dpkg-shlibdeps finds the binary needs. A binary linked with the Swift runtime statically (`make
# deb` builds with --static-swift-stdlib) needs only Debian's libraries; one linked dynamically
# (a debug build) gets the libraries no Debian package owns (the toolchain's libswiftCore.so,
# libFoundation.so, ...) copied to /usr/lib/herald, and its RUNPATH set there with patchelf.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
debian=$repo/deploy/debian

# The packaged unit: the repository's unit with the package's paths and user.
packaged_unit() { # packaged_unit OUT
    {
        echo "# Packaged by scripts/build-deb.sh from deploy/herald.service, with the package's binary"
        echo "# (/usr/bin/herald) and its herald system user in place of DynamicUser=."
        sed -e 's|/usr/local/bin/herald|/usr/bin/herald|g' \
            -e 's|^DynamicUser=yes$|User=herald\nGroup=herald|' "$repo/deploy/herald.service"
    } >"$1"
    if grep -q '/usr/local/bin\|^DynamicUser' "$1" || ! grep -q '^User=herald$' "$1" ||
        ! grep -q '^ExecStart=/usr/bin/herald serve' "$1"; then
        echo "build-deb: deploy/herald.service changed; the packaged unit no longer follows from it" >&2
        exit 1
    fi
}

if [ "${1:-}" = --unit ]; then
    packaged_unit "$2"
    exit 0
fi

binary=${1:?usage: scripts/build-deb.sh BINARY [OUTDIR]}
outdir=${2:-.}
compress=${HERALD_DEB_COMPRESS:--Zxz}
version=$("$binary" --version)
[[ $version =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || { echo "build-deb: odd version '$version'" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/debian/herald # dpkg-shlibdeps looks for the package's own files under debian/<package>
mkdir -p "$pkg/DEBIAN"

install -D -m 0755 "$binary" "$pkg/usr/bin/herald"
strip --strip-debug "$pkg/usr/bin/herald"

# Libraries no Debian package owns (the Swift toolchain's) travel with the binary.
bundled=()
while read -r library; do
    dpkg -S "$(readlink -f "$library")" >/dev/null 2>&1 || dpkg -S "$library" >/dev/null 2>&1 || bundled+=("$library")
done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
if [ ${#bundled[@]} -gt 0 ]; then
    command -v patchelf >/dev/null || { echo "build-deb: patchelf is needed to bundle ${bundled[*]}" >&2; exit 1; }
    install -d "$pkg/usr/lib/herald"
    for library in "${bundled[@]}"; do
        install -m 0644 "$(readlink -f "$library")" "$pkg/usr/lib/herald/$(basename "$library")"
        strip --strip-debug "$pkg/usr/lib/herald/$(basename "$library")"
    done
    patchelf --set-rpath /usr/lib/herald "$pkg/usr/bin/herald"
    for library in "$pkg"/usr/lib/herald/*.so*; do
        patchelf --set-rpath /usr/lib/herald "$library"
    done
    echo "build-deb: bundled in /usr/lib/herald: ${bundled[*]##*/}" >&2
fi

packaged_unit "$stage/herald.service"
install -D -m 0644 "$stage/herald.service" "$pkg/lib/systemd/system/herald.service"
install -d -m 0700 "$pkg/etc/herald"
install -m 0600 "$repo/deploy/herald.yaml" "$pkg/etc/herald/herald.yaml"
doc=$pkg/usr/share/doc/herald
install -D -m 0644 "$debian/README.Debian" "$doc/README.Debian"
install -m 0644 "$repo/docs/operations.md" "$repo/docs/relay.md" "$doc/"
install -D -m 0644 "$repo/deploy/herald-alerts.yml" "$doc/examples/herald-alerts.yml"

# Depends: from the ELF files, as dpkg-shlibdeps reads them (run where it finds debian/control).
printf 'Source: herald\n\nPackage: herald\nArchitecture: amd64\n' >"$stage/debian/control"
elves=("$pkg/usr/bin/herald")
[ -d "$pkg/usr/lib/herald" ] && elves+=("$pkg"/usr/lib/herald/*.so*)
depends=$(cd "$stage" && dpkg-shlibdeps -O ${bundled:+-l"$pkg/usr/lib/herald"} "${elves[@]}" 2>"$stage/shlibdeps.err" |
    sed -n 's/^shlibs:Depends=//p') || { cat "$stage/shlibdeps.err" >&2; exit 1; }
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; cat "$stage/shlibdeps.err" >&2; exit 1; }

installed_size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@DEPENDS@|$depends|" -e "s|@INSTALLED_SIZE@|$installed_size|" \
    "$debian/control" >"$pkg/DEBIAN/control"
install -m 0644 "$debian/conffiles" "$pkg/DEBIAN/conffiles"
install -m 0755 "$debian/postinst" "$debian/prerm" "$debian/postrm" "$pkg/DEBIAN/"
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f ! -path './etc/*' -printf '%P\0' | sort -z |
    xargs -0 md5sum >DEBIAN/md5sums)

mkdir -p "$outdir"
deb=$outdir/herald_${version}_amd64.deb
# shellcheck disable=SC2086 # the compression flags are words
dpkg-deb --root-owner-group $compress --build "$pkg" "$deb" >/dev/null
echo "built $deb: herald $version, Depends: $depends, adduser, ca-certificates" >&2
echo "$deb"
