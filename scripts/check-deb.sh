#!/usr/bin/env bash
# Installs a herald .deb in a fresh Debian 12 root and runs it there as its unit would:
#
#   scripts/check-deb.sh herald_<version>_amd64.deb        (as root)
#
# Each run starts from a new copy of a pristine debootstrap'd minbase root (scripts/debian-root.sh;
# the first run makes it, about a minute), so the package meets a machine nothing was installed
# on. In it, this script:
#   1. runs the install block of docs/operations.md ("Install from the Debian package") as written:
#      `apt-get install ./herald_…deb`, its Depends coming from the Debian mirror;
#   2. checks what the package made: the binary finds every library (ldd), the herald system user,
#      /etc/herald 0700 root with herald.yaml 0600 (a conffile), /var/lib/herald 0700 herald;
#   3. runs the keys block of that section as written (the APNs .p8 and the FCM service account an
#      operator downloads are made here with `herald keys`, for deploy/herald.yaml's team and key
#      id), its last line being `herald check --offline` with the installed configuration;
#   4. does what systemd does for the installed unit (there is no systemd in a chroot): each
#      LoadCredential= file into /run/credentials/herald.service (0400, the unit's User=),
#      Environment=, WorkingDirectory=, then ExecStartPre= and ExecStart= as User=, with the APNs
#      and FCM hosts pointed at a `herald sandbox` in the root (the one change to the unit's
#      environment, as Tests/interop/test_deploy.py does);
#   5. activates a device from the sandbox, sends a message through the relay's API, and waits for
#      the push to be delivered and seen at the sandbox; SIGTERM must end the service with exit 0;
#   6. installs the package again over itself (an edited herald.yaml and the keys must stay), then
#      purges it: /var/lib/herald goes, the operator's keys in /etc/herald stay.
# Any step failing stops the script with what it printed. The servers are killed and the root
# unmounted and deleted on the way out.
set -euo pipefail
deb=$(readlink -f "${1:?usage: scripts/check-deb.sh herald_VERSION_amd64.deb}")
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "check-deb: needs root (chroot, mount)" >&2; exit 1; }
# shellcheck source=scripts/debian-root.sh
. "$repo/scripts/debian-root.sh"

# What deploy/herald.yaml names: the app, its team and the key id of its .p8.
bundle_id=com.example.chat
team_id=ABCDE12345
key_id=ABC123DEFG
timeout=${HERALD_CHECK_DEB_TIMEOUT:-45}

started=$SECONDS
root=$(mktemp -d /var/tmp/herald-deb.XXXXXX)
logs=$root.logs
mkdir -p "$logs"
pids=()
cleanup() {
    local pid proc
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    # Anything else still running in this root (started here, whatever became of its parent).
    for proc in /proc/[0-9]*; do
        [ "$(readlink "$proc/root" 2>/dev/null)" = "$root" ] && kill -9 "${proc#/proc/}" 2>/dev/null
    done
    debian_root_cleanup
    # Never delete through a mount point that is still there.
    if grep -q " $root/" /proc/mounts; then
        echo "check-deb: $root still has mounts; left in place" >&2
    else
        rm -rf --one-file-system "$root" "$logs"
    fi
}
trap cleanup EXIT
step() { echo "check-deb [$((SECONDS - started))s] $*"; }
fail() {
    local message="$*"
    [ ${#message} -le 2000 ] || message="${message:0:2000} …"
    echo "check-deb: FAIL: $message" >&2
    for log in "$logs"/*.log; do [ -s "$log" ] && { echo "--- ${log##*/}" >&2; tail -n 40 "$log" >&2; }; done
    exit 1
}
in_root() { debian_root_chroot "$root" "$1"; }
# The block after a `<!-- NAME -->` marker in docs/operations.md.
doc_block() { awk -v marker="<!-- $1 -->" '$0 == marker { on = 1; next } on && /^```sh$/ { body = 1; next }
    body && /^```$/ { exit } body { print }' "$repo/docs/operations.md"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
# http METHOD URL [BODY] [TOKEN]: the body of a 2xx answer, or a failure with the answer.
http() {
    local answer
    answer=$(curl -sS --noproxy '*' --max-time 10 -X "$1" "$2" ${3:+-d "$3"} ${4:+-H "authorization: Bearer $4"} \
        -w '\n%{http_code}') || fail "$1 $2: no answer"
    [[ ${answer##*$'\n'} == 2?? ]] || fail "$1 $2: ${answer##*$'\n'} ${answer%$'\n'*}"
    echo "${answer%$'\n'*}"
}
wait_for() { # wait_for LOG TEXT PID
    local deadline=$((SECONDS + timeout))
    until grep -sqF -- "$2" "$1"; do
        kill -0 "$3" 2>/dev/null || fail "${1##*/}: exited before '$2'"
        [ $SECONDS -lt $deadline ] || fail "${1##*/}: no '$2' within ${timeout}s"
        sleep 0.2
    done
}

step "a fresh Debian 12 root at $root"
debian_root_new "$root"
debian_root_mount "$root"
cp "$deb" "$root/tmp/"
# The blocks are run as written, and an operator answers apt's question at a terminal; here apt
# takes the yes from its configuration.
echo 'APT::Get::Assume-Yes "true";' >"$root/etc/apt/apt.conf.d/90check-deb-assume-yes"

install_block=$(doc_block deb-install)
keys_block=$(doc_block deb-keys)
[ -n "$install_block" ] && [ -n "$keys_block" ] || fail "docs/operations.md lacks its deb-install or deb-keys block"

step "docs/operations.md's install block, in /tmp: $(echo "$install_block" | grep -v '^#' | head -1)"
in_root "apt-get update -qq && cd /tmp && $install_block" >"$logs/install.log" 2>&1 || fail "the install block failed"
grep -q "herald: installed, not enabled and not started" "$logs/install.log" ||
    fail "postinst did not say what to do before a start"

step "what the package made"
# shellcheck disable=SC2016 # expanded in the root
in_root '
    ! ldd /usr/bin/herald | grep "not found"
    [ "$(herald --version)" = "'"$(dpkg-deb -f "$deb" Version)"'" ]
    getent passwd herald | grep -q ":/var/lib/herald:/usr/sbin/nologin$"
    [ "$(stat -c "%a %U %G" /etc/herald)" = "700 root root" ]
    [ "$(stat -c "%a %U %G" /etc/herald/herald.yaml)" = "600 root root" ]
    [ "$(stat -c "%a %U %G" /var/lib/herald)" = "700 herald herald" ]
    dpkg-query -W -f="\${Conffiles}" herald | grep -q "^ /etc/herald/herald.yaml "
    [ -f /lib/systemd/system/herald.service ]
' >"$logs/layout.log" 2>&1 || fail "the installed files are not as they should be"
cmp -s "$root/etc/herald/herald.yaml" "$repo/deploy/herald.yaml" || fail "/etc/herald/herald.yaml is not deploy/herald.yaml"

step "docs/operations.md's keys block, the operator's downloads made with herald keys"
in_root "herald keys apns --out /root/downloads --key-id $key_id --team-id $team_id
    herald keys fcm --out /root/downloads
    cp /root/downloads/fcm-service-account.json /root/downloads/firebase-service-account.json
    cp -r /root/downloads /root/sandbox-keys" >"$logs/downloads.log" 2>&1 || fail "herald keys failed"
in_root "cd /root && ${keys_block//\/path\/to\//\/root\/downloads\/}" >"$logs/keys.log" 2>&1 || fail "the keys block failed"
grep -q "^skip apns .*not probed (--offline)" "$logs/keys.log" || fail "herald check --offline: no skipped apns line"
grep -v -e '^ok   ' -e '^skip ' -e '^wrote ' "$logs/keys.log" && fail "herald check --offline: a line neither ok nor skip"
for key in master.key api.key apns.p8 fcm-service-account.json; do
    [ "$(stat -c %a "$root/etc/herald/$key")" = 600 ] || fail "/etc/herald/$key is not 0600"
done

step "the sandbox in Apple's and Google's place"
apns_port=$(free_port) fcm_port=$(free_port) control_port=$(free_port) relay_port=$(free_port)
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /usr/bin/env -C /root herald sandbox --log-level warning \
    --apns-port "$apns_port" --fcm-port "$fcm_port" --control-port "$control_port" \
    --keys-dir /root/sandbox-keys --app "$bundle_id:$team_id" >"$logs/sandbox.log" 2>&1 &
pids+=($!)
wait_for "$logs/sandbox.log" "  control API" "${pids[-1]}"
install -m 0644 "$root/root/sandbox-keys/sandbox-ca.pem" "$root/tmp/sandbox-ca.pem"

step "the installed unit, carried out as systemd would"
unit=$root/lib/systemd/system/herald.service
credentials=/run/credentials/herald.service
user="" group="" working="" pre="" start=""
environment=(
    "HERALD_HOST=127.0.0.1" "HERALD_PORT=$relay_port"
    "HERALD_APNS_URL=https://127.0.0.1:$apns_port" "HERALD_APNS_CA=/tmp/sandbox-ca.pem"
    "HERALD_FCM_URL=https://127.0.0.1:$fcm_port" "HERALD_FCM_CA=/tmp/sandbox-ca.pem"
)
expand() { local v=${1//%d/$credentials}; echo "${v//%S//var/lib}"; }
install -d -m 0500 "$root$credentials"
while IFS= read -r line; do
    key=${line%%=*} value=${line#*=}
    case $key in
    User) user=$value ;;
    Group) group=$value ;;
    WorkingDirectory) working=$(expand "$value") ;;
    ExecStartPre) [ -z "$pre" ] || fail "more than one ExecStartPre="; pre=$(expand "$value") ;;
    ExecStart) [ -z "$start" ] || fail "more than one ExecStart="; start=$(expand "$value") ;;
    Environment) environment=("$(expand "$value")" "${environment[@]}") ;;
    LoadCredential)
        install -m 0400 "$root${value#*:}" "$root$credentials/${value%%:*}" || fail "LoadCredential=$value: no such file"
        ;;
    esac
done < <(grep -E '^[A-Za-z]+=' "$unit")
[ "$user" = herald ] && [ "$group" = herald ] || fail "the unit does not run as herald:herald"
[ "$working" = /var/lib/herald ] || fail "WorkingDirectory= is $working"
[[ $pre == "/usr/bin/herald check --offline "* ]] || fail "ExecStartPre= is $pre"
[[ $start == "/usr/bin/herald serve "* ]] || fail "ExecStart= is $start"
in_root "chown -R herald:herald $credentials"
# As User= and Group=, in WorkingDirectory=, with Environment=; every step an exec, so that the
# background job's pid is herald's own and SIGTERM reaches it.
as_unit=(chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${environment[@]}"
    setpriv --reuid="$user" --regid="$group" --init-groups env -C "$working")

# shellcheck disable=SC2086 # the unit's command lines are words
"${as_unit[@]}" $pre >"$logs/check.log" 2>&1 || fail "ExecStartPre= failed: $pre"
grep -v -e '^ok   ' -e '^skip ' "$logs/check.log" && fail "ExecStartPre=: a line neither ok nor skip"
# shellcheck disable=SC2086
"${as_unit[@]}" $start >"$logs/serve.log" 2>&1 &
serve=$!
pids+=("$serve")
wait_for "$logs/serve.log" '"message":"ready"' "$serve"
relay=http://127.0.0.1:$relay_port
http GET "$relay/health/ready" >/dev/null

step "a device activates, a message is sent, the push reaches the sandbox"
api_key=$(cat "$root/etc/herald/api.key")
device=$(http POST "http://127.0.0.1:$control_port/sandbox/devices" "{\"bundle_id\":\"$bundle_id\"}")
token=$(echo "$device" | json '["messaging_token"]')
public=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
http POST "$relay/v1/activations" "{\"user_id\":\"customer-1\",\"app\":\"$bundle_id\",\"platform\":\"ios\",\
\"public_key\":\"$public\",\"messaging_token\":\"$token\"}" "$api_key" >/dev/null
receipt=$(http POST "$relay/v1/messages" \
    '{"to":"customer-1","from":{"id":"agent","name":"Dana"},"conversation":"c","text":"shipped"}' "$api_key")
push_id=$(echo "$receipt" | json '["pushes"][0]["push_id"]')
deadline=$((SECONDS + 30))
until [ "$(http GET "$relay/v1/pushes/$push_id" "" "$api_key" | json '["state"]')" = delivered ]; do
    [ $SECONDS -lt $deadline ] || fail "push $push_id not delivered within 30 s: $(http GET "$relay/v1/pushes/$push_id" "" "$api_key")"
    sleep 0.2
done
seen=$(http GET "http://127.0.0.1:$control_port/sandbox/inspection?limit=1")
echo "$seen" | grep -q "\"topic\":\"$bundle_id\"" || fail "the sandbox did not see the push: $seen"
echo "$seen" | grep -q "shipped\|Dana" && fail "the push network saw the sender or the text: $seen"
[ "$(in_root 'stat -c "%U %a" /var/lib/herald/data/herald.sqlite')" = "herald 600" ] ||
    fail "the database is not herald's, 0600"

step "SIGTERM drains and ends the service"
kill -TERM "$serve"
status=0
wait "$serve" || status=$?
[ $status = 0 ] || fail "herald serve exited $status on SIGTERM"
grep -q '"message":"stopped' "$logs/serve.log" || fail "no stop record in the service's log"

step "the package again over itself (an upgrade): the edited configuration and the keys stay"
echo "# edited by the operator" >>"$root/etc/herald/herald.yaml"
in_root "dpkg -i /tmp/$(basename "$deb")" >"$logs/upgrade.log" 2>&1 || fail "dpkg -i over the installed package failed"
grep -q "^# edited by the operator$" "$root/etc/herald/herald.yaml" || fail "the upgrade replaced the edited herald.yaml"
grep -q "not started" "$logs/upgrade.log" && fail "postinst asked for keys that are there"
[ "$(stat -c %a "$root/etc/herald/master.key")" = 600 ] || fail "the upgrade touched master.key"

step "apt-get purge herald"
in_root "apt-get purge -y -qq herald" >"$logs/purge.log" 2>&1 || fail "apt-get purge failed"
# shellcheck disable=SC2016 # expanded in the root
in_root '
    [ ! -e /usr/bin/herald ] && [ ! -e /var/lib/herald ] && [ ! -e /etc/herald/herald.yaml ]
    [ -f /etc/herald/master.key ] && getent passwd herald >/dev/null
' >>"$logs/purge.log" 2>&1 || fail "purge did not remove the state, or removed the keys"

step "passed: $(basename "$deb") installed, checked, served and delivered a push in a fresh Debian 12 root"
