"""Who runs the embedded server, and the folders it needs: as root the system user
``memexdb-pg`` (postgres refuses root), created on first use; otherwise the current user.
Existing folders are never chmod-ed: an unreachable data dir is an error."""

from __future__ import annotations

import os
import pwd
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memexdb.embedded.errors import EmbeddedPostgresError

SERVICE_USER = "memexdb-pg"
ROOT_BASE = Path("/var/lib/memexdb")


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    switch: bool  # run pg binaries as this user (we are root; postgres refuses root)


def service_account() -> Account:
    if os.geteuid() != 0:
        pw = pwd.getpwuid(os.geteuid())
        groups = tuple({os.getegid(), *os.getgroups()})
        return Account(pw.pw_name, pw.pw_uid, pw.pw_gid, groups, switch=False)
    try:
        pw = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        cmd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        res = subprocess.run([*cmd, SERVICE_USER], capture_output=True, text=True, check=False)  # noqa: S603
        try:  # a concurrent useradd may have won the race; only the result matters
            pw = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise EmbeddedPostgresError(
                f"cannot create system user {SERVICE_USER}: {res.stderr.strip()}"
            ) from None
    groups = tuple(os.getgrouplist(pw.pw_name, pw.pw_gid))
    return Account(pw.pw_name, pw.pw_uid, pw.pw_gid, groups, switch=True)


def has_access(st: os.stat_result, acct: Account, bits: int) -> bool:
    """Classic owner/group/other check for `acct` (ACLs are ignored)."""
    if acct.uid == 0:
        return True
    shift = 6 if st.st_uid == acct.uid else 3 if st.st_gid in acct.groups else 0
    return (st.st_mode >> shift) & bits == bits


def ensure_parents(path: Path, acct: Account) -> None:
    """Create missing parents of `path` (0755) after checking that `acct` can traverse
    every existing one; never changes an existing folder."""
    for parent in reversed(path.parents):
        try:
            st = parent.stat()
        except FileNotFoundError:
            try:
                parent.mkdir(mode=0o755)
                parent.chmod(0o755)  # ours: don't let the umask narrow it
            except FileExistsError:
                st = parent.stat()
            else:
                continue
        if not has_access(st, acct, 0o1):
            raise EmbeddedPostgresError(
                f"user {acct.name!r}, which runs the embedded postgres server, cannot traverse "
                f"{parent} (mode {st.st_mode & 0o7777:o}, owner uid {st.st_uid}) on the way to "
                f"{path}. Permissions of existing folders are never changed: choose "
                f"MEMEX_DATA_DIR elsewhere, e.g. {ROOT_BASE}."
            )


def claim_dir(path: Path, acct: Account) -> None:
    """Make `path` a 0700 dir of the service user. An existing dir is kept as is if it
    is already the service user's, and otherwise only taken over (as root) if empty."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        st = path.stat()
        if st.st_uid == acct.uid:
            return
        if not acct.switch or any(path.iterdir()):
            raise EmbeddedPostgresError(
                f"{path} is owned by uid {st.st_uid}, not by {acct.name!r} (uid {acct.uid});"
                " choose another MEMEX_DATA_DIR"
            ) from None
    if acct.switch:
        os.chown(path, acct.uid, acct.gid)
    path.chmod(0o700)
