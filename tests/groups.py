"""Groups for the tests of who may write a file: write by the owner's own user private group is
the owner's (`memoryd.writers`), write by another group is another user's."""

from __future__ import annotations

import os
from pathlib import Path

FOREIGN = 65534
"""A group that is not the test user's alone (nogroup): root may give a file to it."""


def foreign_group(path: Path) -> bool:
    """Give `path` a group that holds other users when the test may (root); whether its group
    is now one whose write is another user's."""
    from memoryd.writers import private_group

    if os.geteuid() == 0:
        os.chown(path, -1, FOREIGN, follow_symlinks=False)
    return not private_group(os.lstat(path).st_gid, os.geteuid())


def own_group_is_private() -> bool:
    """Whether the test user's primary group holds them alone (Debian's and Ubuntu's users)."""
    from memoryd.writers import private_group

    return private_group(os.getegid(), os.geteuid())
