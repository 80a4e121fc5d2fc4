"""Locating the public benchmark data the adapter tests run on (never copied into the repository).

The data lives in ``$HG_SHARED_DATA`` (default: ``../shared/data`` beside the checkout). When it is absent the
tests that need it are skipped with the path in the reason; with ``HG_REQUIRE_SHARED_DATA=1`` (set by
``.ci/run``) its absence is a failure instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HG_SHARED_DATA", ROOT.parent / "shared" / "data"))


def shared_data_mark(subdir: str, marker_file: str) -> pytest.MarkDecorator:
    """A ``skipif`` mark for tests needing ``SHARED_DATA/subdir/marker_file``; a hard error when required."""
    path = SHARED_DATA / subdir / marker_file
    missing = not path.is_file()
    if missing and os.environ.get("HG_REQUIRE_SHARED_DATA") == "1":
        raise RuntimeError(f"HG_REQUIRE_SHARED_DATA=1 but {path} does not exist (set HG_SHARED_DATA)")
    return pytest.mark.skipif(missing, reason=f"public data not found at {path} (set HG_SHARED_DATA)")
