"""What a stranger's tampered files hold, for the trust tests of rlexp's runs and RL Zoo's: a pickle that
calls os.system when unpickled, and a model zip with one pickled entry replaced."""

from __future__ import annotations

import base64
import json
import os
import zipfile
from pathlib import Path


class Payload:
    """What a tampered pickle holds: unpickling it calls os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def tampered_zip(zip_path: Path, key: str, payload: bytes) -> None:
    """model.zip with the pickled entry ``key`` of its data replaced (every other file kept as it is)."""
    with zipfile.ZipFile(zip_path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(files["data"])
    data[key] = {":type:": "<class 'object'>", ":serialized:": base64.b64encode(payload).decode()}
    files["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(zip_path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
