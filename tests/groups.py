"""Groups for the tests of who may write a file: write by the owner's own user private group is
the owner's (`memoryd.writers`), write by another group is another user's. Neither helper asks
memoryd, so a broken rule fails its tests rather than skipping them."""

from __future__ import annotations

import grp
import os
import pwd
from pathlib import Path

FOREIGN = 65534
"""A group that is not the test user's alone (nogroup): root may give a file to it."""


def foreign_group(path: Path) -> bool:
    """Give `path` a group of others when the test may (root); whether it did."""
    if os.geteuid() != 0:
        return False
    os.chown(path, -1, FOREIGN, follow_symlinks=False)
    return True


def own_group_is_private() -> bool:
    """Whether the test user's primary group is named after them and has no other member (root's
    `root` here, Debian's and Ubuntu's users)."""
    user = pwd.getpwuid(os.geteuid())
    group = grp.getgrgid(user.pw_gid)
    return group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}
