#!/usr/bin/env bash
# Issue 4: messages/s into one 20-member conversation with unread counts kept, against the
# same pushes with the effects switched off; and how soon a member's long poll sees a message.
set -euo pipefail
source "$(dirname "$0")/common.sh"
exec /usr/bin/python3 Bench/chat_bench.py
