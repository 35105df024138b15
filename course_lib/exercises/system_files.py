"""What of the machine's own folders a sandbox started by root must not see (:mod:`.isolation`)."""
from __future__ import annotations

import functools
import os
import stat

PRIVATE_SCAN = ("/etc", "/opt")  # where a system keeps what only root may read (/etc/shadow, keys, passwords)


def _private(path: str) -> tuple[str, bool] | None:
    """(path, is a folder) when ``path`` is a file others may not read or a folder they may not enter, else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o001:
        return path, True
    if stat.S_ISREG(st.st_mode) and not st.st_mode & 0o004:
        return path, False
    return None


@functools.lru_cache(maxsize=1)
def private_to_root() -> tuple[tuple[str, bool], ...]:
    """(path, is a folder) of what in PRIVATE_SCAN not every user may read -- a file without read permission for
    others, a folder without search permission for them -- and of the root-only files at the top of /proc.
    bubblewrap started by root maps the sandbox's user to root, so the sandbox would read them; each is covered
    (a file by an empty one, a folder by an empty read-only one). Its code and libraries (/usr, /lib) are readable
    by every user anyway."""
    found = []
    for top in PRIVATE_SCAN:
        for folder, dirs, files in os.walk(top):
            for name in list(dirs):
                if (hit := _private(os.path.join(folder, name))) is not None:
                    found.append(hit)
                    dirs.remove(name)  # covered whole: nothing below it to look at
            found += [hit for name in files if (hit := _private(os.path.join(folder, name))) is not None
                      and not hit[1]]
    # the kernel's own root-only files (/proc/slabinfo, /proc/kpageflags, ...)
    found += [hit for name in os.listdir("/proc") if not name.isdigit()
              and (hit := _private(f"/proc/{name}")) is not None and not hit[1]]
    return tuple(found)
