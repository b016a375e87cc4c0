#!/usr/bin/env bash
# The TLS session-ticket keys that every nginx instance (and every node of a cluster) shares,
# so that a client resumes its session on whichever instance the kernel hands its next
# connection (docs/operations.md, "TLS sessions"). Three random 80-byte keys in one folder,
# read by the site's ssl_session_ticket_key lines (Deploy/render-nginx.sh) in this order:
#   current.key   encrypts the tickets nginx issues now (the first line)
#   next.key      only decrypts: the key the next rotation makes current. An instance not
#                 reloaded yet after a rotation already accepts the tickets the reloaded
#                 ones issue, so the reloads' order and their gap drop no session
#   previous.key  only decrypts: the tickets issued before the last rotation
#
#   tls-ticket-keys.sh make DIR     setup: the folder (0700) and any key missing (0600);
#                                   modes put right; safe to repeat
#   tls-ticket-keys.sh rotate DIR   previous <- current <- next <- a new key; reload every
#                                   nginx instance after it (nginx reads the files at a reload)
#
# Production: DIR is /etc/tideway/tls-tickets, rotated by tideway-tls-tickets.service
# (Deploy/systemd), which reloads the instances itself. The dev stack: $STATE/tls/session-tickets
# (`Deploy/dev/stack.sh up` makes them, `stack.sh rotate-tickets` rotates and reloads).
# Every step renames a complete file over another, so an interrupted rotation leaves three
# valid keys behind (a rerun rotates once more).
set -euo pipefail

die() { printf 'tls-ticket-keys.sh: %s\n' "$*" >&2; exit 1; }
[[ $# == 2 && ($1 == make || $1 == rotate) ]] || die "usage: tls-ticket-keys.sh make|rotate DIR"
dir=$2
umask 077

# A new random key in a temporary file of DIR (renamed over its place by the caller).
new_key() {
    local tmp
    tmp=$(mktemp "$dir/.new.XXXXXX")
    head -c 80 /dev/urandom >"$tmp"
    [[ $(stat -c %s "$tmp") == 80 ]] || { rm -f "$tmp"; die "no 80 random bytes from /dev/urandom"; }
    echo "$tmp"
}

# A copy of key $1 in a temporary file of DIR.
copy_of() {
    local tmp
    tmp=$(mktemp "$dir/.copy.XXXXXX")
    cat "$dir/$1" >"$tmp"
    echo "$tmp"
}

case $1 in
    make)
        mkdir -p "$dir"
        chmod 0700 "$dir"
        for name in current next previous; do
            [[ -s $dir/$name.key ]] || mv "$(new_key)" "$dir/$name.key"
            chmod 0600 "$dir/$name.key"
        done
        ;;
    rotate)
        for name in current next previous; do
            [[ -s $dir/$name.key ]] || die "$dir/$name.key missing: run 'tls-ticket-keys.sh make $dir' first"
        done
        fresh=$(new_key)
        mv "$(copy_of current.key)" "$dir/previous.key"
        mv "$(copy_of next.key)" "$dir/current.key"
        mv "$fresh" "$dir/next.key"
        ;;
esac
