"""Reading the test stack's mail sink (Deploy/dev/smtp_sink.py, started by test.sh):
every message the workers sent, with its envelope, from $TIDEWAY_TEST_STATE/mail."""
import email
import email.policy
import glob
import json
import os
import re
import time

from conftest import STATE

MAIL_DIR = os.path.join(STATE or "", "mail")


class Mail:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.raw = f.read()
        with open(path[:-len(".eml")] + ".json") as f:
            envelope = json.load(f)
        self.sender = envelope["from"]
        self.recipients = envelope["to"]
        self.message = email.message_from_bytes(self.raw, policy=email.policy.default)
        self.header_block = self.raw.split(b"\r\n\r\n", 1)[0]

    @property
    def text(self):
        return self.message.get_content()

    @property
    def link(self):
        match = re.search(r"https://\S+/invite/\S+", self.text)
        assert match, self.text
        return match.group(0)


def all_mail():
    return [Mail(path) for path in sorted(glob.glob(os.path.join(MAIL_DIR, "*.eml")))]


def mail_to(address):
    return [m for m in all_mail() if f"<{address}>" in m.recipients]


def wait_for_mail(address, count=1, timeout=30):
    """The mails to `address` once there are `count` of them; the sink gets them from a
    background queue, so they may come a moment after the page."""
    deadline = time.monotonic() + timeout
    while True:
        found = mail_to(address)
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) >= count, f"{len(found)} mails to {address}, expected {count}"
            return found
        time.sleep(0.1)


def worker_logs():
    text = ""
    for path in glob.glob(os.path.join(STATE, "log", "worker-*.log")):
        with open(path, errors="replace") as f:
            text += f.read()
    return text
