"""A real SMTP server for the tests: aiosmtpd on 127.0.0.1, a free port.

Each message it accepts is written to --dir as <n>.eml (the DATA as received, with the
envelope in X-Envelope-From / X-Envelope-To headers on top), and as <n>.txt: its From, To
and Subject headers and its text, decoded (quoted-printable lines joined). With --fail-first N the first N
messages are answered `451 try again later`; with --refuse-all every message is answered
`550 mailbox unavailable`. Prints `port <n>` once it listens, then serves until killed.
"""

import argparse
import asyncio
import email
import email.policy
import os
import sys

from aiosmtpd.smtp import SMTP


class Sink:
    def __init__(self, directory, fail_first, refuse_all):
        self.directory = directory
        self.fail_left = fail_first
        self.refuse_all = refuse_all
        self.count = 0

    async def handle_DATA(self, server, session, envelope):
        if self.refuse_all:
            return "550 mailbox unavailable"
        if self.fail_left > 0:
            self.fail_left -= 1
            return "451 try again later"
        self.count += 1
        head = f"X-Envelope-From: {envelope.mail_from}\r\nX-Envelope-To: {', '.join(envelope.rcpt_tos)}\r\n"
        path = os.path.join(self.directory, f"{self.count:04}.eml")
        with open(path + ".part", "wb") as f:
            f.write(head.encode() + envelope.original_content)
        parsed = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        text = f"From: {parsed['From']}\nTo: {parsed['To']}\nSubject: {parsed['Subject']}\n\n{parsed.get_content()}"
        with open(path[:-4] + ".txt", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".part", path)
        return "250 OK"


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--refuse-all", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    sink = Sink(args.dir, args.fail_first, args.refuse_all)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(sink, hostname="sink.test"), "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"port {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
