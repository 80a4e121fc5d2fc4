"""The job server's settings (:class:`_Config`) and the modules only its jobs need (:func:`_job_module`).

The first part of the server program (``harness_gym/sandbox/server/__init__.py`` says what it does and how its
parts are joined); like every part it imports the standard library and nothing else but the parts before it.
"""

from __future__ import annotations

import sys
import types


class _Config:
    """Server settings, from the JSON given as the first argument."""

    def __init__(self, raw: dict) -> None:
        self.preload: list[str] = list(raw.get("preload", []))
        self.work_root: str = raw.get("work_root") or _job_module("tempfile").gettempdir()
        self.job_uid: int = int(raw.get("job_uid", 65534))
        self.job_gid: int = int(raw.get("job_gid", 65534))
        self.max_output: int = int(raw.get("max_output", 65536))
        self.nproc: int = int(raw.get("nproc", 64))
        self.nofile: int = int(raw.get("nofile", 256))
        self.fsize_mb: int = int(raw.get("fsize_mb", 64))
        self.lock_tmp: bool = bool(raw.get("lock_tmp", False))
        self.env: dict[str, str] = dict(raw.get("env", {}))
        self.expose: list[str] = list(raw.get("expose", []))
        self.cover: dict[str, int] = {str(k): int(v) for k, v in raw.get("cover", {}).items()}
        self.hide: list[str] = list(raw.get("hide", []))
        self.scrub: list[str] = list(raw.get("scrub", []))
        self.scrub_owned: list[str] = list(raw.get("scrub_owned", []))
        self.block_userns: bool = bool(raw.get("block_userns", True))
        self.inodes: int = int(raw.get("inodes", 16384))
        self.remount_inodes: dict[str, int] = {str(k): int(v) for k, v in raw.get("remount_inodes", {}).items()}
        self.drop_sys_admin: bool = bool(raw.get("drop_sys_admin", False))
        self.private_scratch: bool = bool(raw.get("private_scratch", True))


_JOB_MODULES = ("linecache", "shutil", "tempfile", "traceback")
"""Modules only the jobs and their clean-up need: imported after the server's first line, before its preloads."""


def _job_module(name: str) -> types.ModuleType:
    """One of ``_JOB_MODULES``, imported (once the server is ready, a look-up in ``sys.modules``)."""
    return sys.modules.get(name) or __import__(name)
