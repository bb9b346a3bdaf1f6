"""Locate, download and verify dataset files.

Order: ``$DPAUDIT_DATA/<folder>/<file>`` (the layout of the shared datasets folder, gzip or plain),
then the user cache (``$DPAUDIT_CACHE``, else ``$XDG_CACHE_HOME/dpaudit``, else
``~/.cache/dpaudit``), then the public download address, written to the cache atomically. Every
source is checked against the sha256 of the file's *content* (after gzip decompression), so a
local copy and a download are verified the same way; a mismatch refuses to load.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dpaudit._errors import DatasetError
from dpaudit._io import atomic_open

__all__ = ["DataFile", "fetch_bytes", "cache_dir", "DATA_ENV"]

DATA_ENV = "DPAUDIT_DATA"


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: where it lies locally, where to download it, and its checksum."""

    folder: str
    name: str  # file name inside the folder, without a .gz suffix
    sha256: str  # of the decompressed content
    url: str

    def local_candidates(self, root: Path) -> list[Path]:
        base = root / self.folder / self.name
        return [base.with_name(base.name + ".gz"), base]


def cache_dir() -> Path:
    if os.environ.get("DPAUDIT_CACHE"):
        return Path(os.environ["DPAUDIT_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dpaudit"


def _content(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def _verify(data: bytes, spec: DataFile, origin: str) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise DatasetError(
            f"{origin}: sha256 of {spec.folder}/{spec.name} is {digest}, expected {spec.sha256}; "
            "the file is corrupt or not the published one — replace it, refusing to load"
        )
    return data


def download(url: str, spec: DataFile, *, part: bool = False) -> bytes:
    """Bytes at ``url`` (gunzipped if gzip), or DatasetError naming DPAUDIT_DATA and the expected path."""
    root = os.environ.get(DATA_ENV)
    import urllib.error  # the network stack only when a file is downloaded (start-up, issue 25)
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - fixed https URL
            data = response.read()
    except (urllib.error.URLError, OSError) as exc:
        where = (
            f"{DATA_ENV}={root} has no {spec.folder}/{spec.name}[.gz]"
            if root
            else f"{DATA_ENV} is not set (expected {DATA_ENV}/{spec.folder}/{spec.name}[.gz])"
        )
        what = "downloading its part" if part else "downloading"
        raise DatasetError(
            f"cannot find {spec.folder}/{spec.name}: {where}, and {what} {url} failed "
            f"({getattr(exc, 'reason', exc)}); set {DATA_ENV} to a folder holding {spec.folder}/"
        ) from None
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def fetch_bytes(spec: DataFile, fetch: Callable[[], bytes] | None = None) -> bytes:
    """Verified content of a dataset file (see module docstring for the search order).

    ``fetch`` produces the content when neither ``$DPAUDIT_DATA`` nor the cache has it (default: one
    download of ``spec.url``; a file published in parts passes its own); its result is verified and
    written to the cache atomically like any download.
    """
    root = os.environ.get(DATA_ENV)
    if root:
        for path in spec.local_candidates(Path(root)):
            if path.is_file():
                return _verify(_content(path), spec, str(path))
    cached = cache_dir() / spec.folder / spec.name
    if cached.is_file():
        return _verify(cached.read_bytes(), spec, str(cached))
    data = fetch() if fetch is not None else download(spec.url, spec)
    _verify(data, spec, spec.url if fetch is None else f"{spec.name} as downloaded")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(cached, "wb") as handle:
        handle.write(data)
    return data
