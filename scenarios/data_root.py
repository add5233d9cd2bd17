"""Locating and reading the eva_airline fixture directory (scenarios.md §2).

Pure module: no Django import. ``get_eval_data_root`` is evaluated on every call; the dataset
index and the agent configuration are read once per process.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

DATASET_FILE = "eva_airline_dataset.jsonl"
AGENT_CONFIG_FILE = "airline_agent.yaml"
AGENT_CONFIG_SHA256 = "58631672139be47f767c367894919d64091832b0113b099443dcd645609209bd"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_ROOT = REPO_ROOT.parent / "shared" / "eva_airline"


class DataRootError(RuntimeError):
    """The fixture directory is missing or incomplete; the message names the path tried."""


def get_eval_data_root() -> Path:
    """Return the fixture directory: ``$EVAL_DATA_ROOT`` (or its ``eva_airline/`` child,
    upstream layout) when set, else ``../shared/eva_airline`` beside the repository."""
    configured = os.environ.get("EVAL_DATA_ROOT", "")
    if configured:
        root = Path(configured).expanduser()
        if not (root / DATASET_FILE).is_file() and (root / "eva_airline" / DATASET_FILE).is_file():
            root = root / "eva_airline"
        return root.resolve()
    return DEFAULT_DATA_ROOT.resolve()


def data_root_problems(root: Path | None = None) -> list[str]:
    """Describe what is wrong with the fixture directory (empty list when it is usable)."""
    root = root or get_eval_data_root()
    if not root.is_dir():
        return [f"eva_airline data root {root} does not exist (set EVAL_DATA_ROOT)"]
    problems = []
    for name in (DATASET_FILE, AGENT_CONFIG_FILE):
        if not (root / name).is_file():
            problems.append(f"eva_airline data root {root} has no {name}")
    if not problems:
        missing = [eva_id for eva_id in dataset_ids_at(root) if not (root / f"{eva_id}.json").is_file()]
        if missing:
            problems.append(f"eva_airline data root {root} lacks scenario files for {', '.join(missing)}")
    return problems


def dataset_ids_at(root: Path) -> list[str]:
    """Ids of the dataset lines under ``root`` (file order)."""
    return [line["id"] for line in _read_jsonl(root / DATASET_FILE)]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataRootError(f"cannot read {path}: {exc}") from exc
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@functools.cache
def dataset_index() -> dict[str, dict[str, Any]]:
    """Dataset lines keyed by eva id; read once per process."""
    root = get_eval_data_root()
    problems = data_root_problems(root)
    if problems:
        raise DataRootError("; ".join(problems))
    return {line["id"]: line for line in _read_jsonl(root / DATASET_FILE)}


def dataset_line(eva_id: str) -> dict[str, Any]:
    """The dataset line for ``eva_id``; KeyError when absent."""
    index = dataset_index()
    if eva_id not in index:
        raise KeyError(f"eva id {eva_id!r} is not in {DATASET_FILE}")
    return index[eva_id]


def expected_db(eva_id: str) -> dict[str, Any]:
    """A fresh deep copy of the gold database of ``eva_id``."""
    return copy.deepcopy(dataset_line(eva_id)["ground_truth"]["expected_scenario_db"])


def initial_db(eva_id: str) -> dict[str, Any]:
    """A fresh parse of ``<data root>/<eva_id>.json``; the fixture file is never written."""
    if not eva_id:
        raise ValueError("eva_id is empty")
    path = get_eval_data_root() / f"{eva_id}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataRootError(f"cannot read scenario database {path}: {exc}") from exc


@functools.cache
def agent_config() -> dict[str, Any]:
    """``airline_agent.yaml``, checked against its pinned SHA-256; read once per process."""
    import yaml

    path = get_eval_data_root() / AGENT_CONFIG_FILE
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataRootError(f"cannot read agent configuration {path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != AGENT_CONFIG_SHA256:
        raise DataRootError(f"{path} has SHA-256 {digest}, expected {AGENT_CONFIG_SHA256}")
    config = yaml.safe_load(raw.decode("utf-8"))
    for key in ("role", "instructions"):
        if not isinstance(config.get(key), str) or not config[key].strip():
            raise ValueError(f"{path}: '{key}' must be a non-empty string")
    return config
