"""Who besides the owner could write a file or folder, from its mode and group.

Debian, Ubuntu and Fedora give every user a group of their own (a *user private group*: named
after the user, its primary group, no other member) and a umask of 002 to match, so a loop's
logs and folders there are group-writable (0664, 0775) by a group that holds the owner alone.
Write by such a group is the owner's; write by any other group, or by others, is not.
"""

from __future__ import annotations

import functools
import grp
import os
import pwd


@functools.cache
def private_group(gid: int, uid: int) -> bool:
    """Whether the group `gid` holds the user `uid` alone: their primary group, named after them,
    with no other member and no other user's primary group (the answer is kept per process)."""
    try:
        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    if gid != user.pw_gid or group.gr_name != user.pw_name:
        return False
    if any(member != user.pw_name for member in group.gr_mem):
        return False
    return not any(other.pw_gid == gid and other.pw_uid != uid for other in pwd.getpwall())


def others_may_write(mode: int, gid: int) -> bool:
    """Whether a file of ours with `mode` and group `gid` may be written by another user."""
    if mode & 0o002:
        return True
    return bool(mode & 0o020) and not private_group(gid, os.geteuid())
