#!/usr/bin/env python3
"""A mail sink for the test stack: accepts SMTP on 127.0.0.1:<port> and writes each
message, exactly as received (dot-stuffing undone), to <folder>/<n>.eml with its
envelope in <n>.json. Nothing is relayed anywhere.

    smtp_sink.py <port> <folder>

While a file named `refuse` exists in the folder, every connection is answered
421 (service not available), as a relay that is down would, so tests can see how
a failed send is handled. Standard library only (Debian's smtpd is deprecated)."""
import json
import os
import socketserver
import sys
import threading

port, folder = int(sys.argv[1]), sys.argv[2]
os.makedirs(folder, exist_ok=True)
counter = threading.Lock()
sequence = [0]


def store(sender, recipients, data):
    with counter:
        sequence[0] += 1
        name = f"{os.getpid()}-{sequence[0]:06d}"
    with open(os.path.join(folder, name + ".json.tmp"), "w") as f:
        json.dump({"from": sender, "to": recipients}, f)
    os.rename(os.path.join(folder, name + ".json.tmp"), os.path.join(folder, name + ".json"))
    # The message last, atomically: a test that sees the .eml sees all of it.
    with open(os.path.join(folder, name + ".eml.tmp"), "wb") as f:
        f.write(data)
    os.rename(os.path.join(folder, name + ".eml.tmp"), os.path.join(folder, name + ".eml"))


class Session(socketserver.StreamRequestHandler):
    timeout = 30

    def reply(self, line):
        self.wfile.write(line.encode() + b"\r\n")
        self.wfile.flush()

    def handle(self):
        if os.path.exists(os.path.join(folder, "refuse")):
            self.reply("421 sink refusing on purpose: relay down")
            return
        self.reply("220 tideway-test-sink ESMTP")
        sender, recipients = None, []
        while True:
            raw = self.rfile.readline(4096)
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            verb = line[:4].upper()
            if verb == "EHLO":
                self.reply("250-tideway-test-sink")
                self.reply("250-8BITMIME")
                self.reply("250 SIZE 10485760")
            elif verb == "HELO":
                self.reply("250 tideway-test-sink")
            elif verb == "MAIL":
                sender, recipients = line.split(":", 1)[1].strip(), []
                self.reply("250 OK")
            elif verb == "RCPT":
                recipients.append(line.split(":", 1)[1].strip())
                self.reply("250 OK")
            elif verb == "DATA":
                if sender is None or not recipients:
                    self.reply("503 need MAIL and RCPT first")
                    continue
                self.reply("354 end with <CRLF>.<CRLF>")
                data = bytearray()
                while True:
                    raw = self.rfile.readline(65536)
                    if not raw:
                        return
                    if raw in (b".\r\n", b".\n"):
                        break
                    data += raw[1:] if raw.startswith(b".") else raw
                store(sender, recipients, bytes(data))
                self.reply("250 OK stored")
                sender, recipients = None, []
            elif verb == "RSET":
                sender, recipients = None, []
                self.reply("250 OK")
            elif verb == "NOOP":
                self.reply("250 OK")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not implemented")


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    with Server(("127.0.0.1", port), Session) as server:
        print(f"smtp sink on 127.0.0.1:{port}, writing to {folder}", flush=True)
        server.serve_forever()
