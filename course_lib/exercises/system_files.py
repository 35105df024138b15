"""What of the machine's own folders a sandbox started by root must not see (:mod:`.isolation`)."""
from __future__ import annotations

import functools
import os
import stat

PRIVATE_SCAN = ("/etc", "/opt")  # where a system keeps what only root may read (/etc/shadow, keys, passwords)


@functools.lru_cache(maxsize=1)
def private_to_root() -> tuple[tuple[str, bool], ...]:
    """(path, is a folder) of what in PRIVATE_SCAN not every user may read: a file without read permission for
    others, a folder without search permission for them; and the root-only files at the top of /proc. bubblewrap started by root maps the sandbox's user to
    root, so the sandbox would read them; each is covered (a file by an empty one, a folder by an empty read-only
    one). Its code and libraries (/usr, /lib) are readable by every user anyway."""
    found = []
    for top in PRIVATE_SCAN:
        for folder, dirs, files in os.walk(top):
            for name in list(dirs):
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o001:
                    found.append((path, True))
                    dirs.remove(name)  # covered whole: nothing below it to look at
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and not st.st_mode & 0o004:
                    found.append((path, False))
    with os.scandir("/proc") as entries:  # the kernel's own root-only files (/proc/slabinfo, /proc/kpageflags, ...)
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not entry.name.isdigit() and stat.S_ISREG(st.st_mode) and not st.st_mode & 0o004:
                found.append((entry.path, False))
    return tuple(found)
