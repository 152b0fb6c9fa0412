"""A self-signed certificate for the TLS tests, made by the `openssl` command (Debian's
openssl package): CN=localhost, subjectAltName IP:127.0.0.1, a 2048-bit RSA key in PKCS#8
PEM (what both Python's ssl and RocketMQ's Netty load)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path


def self_signed(directory: Path) -> Certificate:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the TLS tests need the openssl command (apt-get install openssl)")
    cert, key = directory / "server.pem", directory / "server.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return Certificate(cert, key)
