"""Where the tests find the repository's files (tests live in folders that mirror the packages)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
CAMPAIGNS = REPO / "campaigns"
SCRIPTS = REPO / "scripts"
SHARED = REPO.parent / "shared"
