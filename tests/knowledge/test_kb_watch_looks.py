"""What `kb watch` takes for a change (knowledge/watch.py): any file written, renamed or removed
in any folder under the knowledge roots, a new folder, and nothing else; through inotify where
there is one, else by the files' sizes and times."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibuddy_cli.knowledge import watch
from aibuddy_cli.store.folder_watch import FolderWatch


class NoInotify(FolderWatch):
    """A FolderWatch where inotify cannot be had (not Linux): every answer is "unknown"."""

    def __init__(self) -> None:
        super().__init__()
        self.close()


@pytest.fixture(params=["inotify", "sizes and times"])
def looks(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> watch._Looks:
    if request.param != "inotify":
        monkeypatch.setattr(watch, "FolderWatch", NoInotify)
    root = tmp_path / "knowledge"
    (root / "system" / "pending").mkdir(parents=True)
    (root / "system" / "pending" / "a.md").write_text("# A\n")
    found = watch._Looks([root])
    if request.param == "inotify" and not found.watch.active:
        pytest.skip("no inotify here (not Linux)")
    return found


def test_what_kb_watch_takes_for_a_change(looks: watch._Looks) -> None:
    root = looks.roots[0]
    assert looks.changed() is False  # the first look says where things stand
    assert looks.changed() is False
    (root / "system" / "pending" / "a.md").write_text("# A, longer now\n")
    assert looks.changed() is True
    assert looks.changed() is False
    (root / "system" / "pending" / ".a.md.swp").write_text("an editor's temp file")
    assert looks.changed() is False
    (root / "system" / "pending" / ".a.md.swp").replace(root / "system" / "pending" / "a.md")
    assert looks.changed() is True
    (root / "personal" / "demo" / "ready").mkdir(parents=True)  # a folder below, made later
    (root / "personal" / "demo" / "ready" / "b.md").write_text("# B\n")
    assert looks.changed() is True
    (root / "personal" / "demo" / "ready" / "b.md").write_text("# B, edited\n")
    assert looks.changed() is True
    (root / "system" / "pending" / "a.md").unlink()
    assert looks.changed() is True
    assert looks.changed() is False
    looks.close()
