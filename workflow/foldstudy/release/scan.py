"""The scanner that guards the sanitized release package (paper §7).

The scanner refuses a release that holds a credential (foldstudy/secrets.py: the
project's key shapes and detect-secrets' plugins, and the live value of any key variable
in the environment), a private endpoint URL, an absolute local path (any: /scratch as
well as /home) or the local user's name, naming file and line. The config's own private
endpoints and local paths were left out before (release/sanitize.py, paper §7). Planted
fact values (the study's own synthetic data, e.g. an `.internal` cache origin, a /var/lib
state path) and what a model wrote are allowed by value.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..credentials import SECRET_ENV
from ..errors import StudyError
from ..secrets import SecretIndex, find_secrets
from ..study.own_arms import PACKAGED_ARMS

# A bracketed IPv6 host ("http://[::1]:8000/v1") is part of the URL, brackets and all.
URL = re.compile(r"\bhttps?://(?:\[[0-9A-Za-z:.%]*\]?)?[^\s\"'<>)\]]*")
PRIVATE_SUFFIXES = (".internal", ".local", ".lan", ".corp", ".home", ".localdomain")
# Any absolute path: a package is relative to itself, so an absolute path names a
# directory of the machine that built it (a model under /scratch/..., a store on /data).
# Not a path: the path part of a URL (preceded by its host or by "//"), "j/q", row ids
# ("main/m/r0/j"), dates, a path under a placeholder ("{workflow.basedir}/config/x" in
# the Snakefile the package carries); a file:// URL is one. Windows drive paths and ~/
# count too.
_SEG = r"[\w.@+~-]+"
ABSOLUTE_PATH = re.compile(
    rf"(?<![\w.:/~\\}}-])/(?:{_SEG}/)+(?:{_SEG})?"  # /scratch/models/x.gguf, /data/
    rf"|(?<![\w.])~/(?:{_SEG}/?)+"  # ~/models/x.gguf
    r"|file:///?[^\s\"'<>]+"
    r"|\b[A-Za-z]:(?:\\{1,2}|/)[^\s\"'<>]+")  # C:\Users\alice, D:/models
TEXT_SUFFIXES = {".csv", ".json", ".md", ".tex", ".txt", ".yaml", ".yml", ".svg", ".py",
                 ".tsv", ".html", ".smk"}
# the workflow definition the package carries (release/crate.py), and Snakemake's mark,
# which is read like any file: it is empty where Snakemake writes it
TEXT_NAMES = {"Snakefile", ".snakemake_timestamp"}
# An image embedded in an SVG (matplotlib's heatmap: data:image/png;base64,...) is binary
# data, like the .png beside it, which is not read either; its base64 text reads as paths
# ("+/a7LnLU/t2es") and refused every release with a heatmap.
EMBEDDED_IMAGE = re.compile(r"(data:image/[\w.+-]+;base64,)[A-Za-z0-9+/=\s]*")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.excerpt}"


def live_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Values of environment variables that look like credentials (name says key/token)."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if SECRET_ENV.search(k) and len(v) >= 8}


def resolver_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host names as the system resolver reads it, or None for a name.

    Beside the dotted quad and IPv6 (`ipaddress`), inet_aton's forms: a short one
    ("10.1" is 10.0.0.1, "127.1" is 127.0.0.1), a single integer ("2130706433" is
    127.0.0.1) and octal or hex parts ("0x7f.1")."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not re.fullmatch(r"[0-9a-fA-FxX.]+", host) or not host[0].isdigit():
        return None  # inet_aton would take "1.2.3.4 junk"; a URL's host holds no space
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def private_host(host: str) -> bool:
    """A host of this machine or its network: loopback, private, link-local, unspecified
    (0.0.0.0) in any spelling the resolver reads, or a local-only name."""
    host = host.lower().strip("[]").rstrip(".")
    if host == "localhost" or host.endswith((".localhost", *PRIVATE_SUFFIXES)):
        return True
    ip = resolver_address(host)
    if ip is None:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_unspecified


def _mask(s: str) -> str:
    return s[:6] + "…" if len(s) > 8 else "…"


def scan_text(
    name: str,
    text: str,
    secrets: Mapping[str, str],
    allowed: set[str],
    local_markers: Iterable[str] = (),
    found: SecretIndex | None = None,
) -> list[Finding]:
    """Findings in one file's text; `allowed` values (planted facts) are skipped. found:
    the text of the secrets a published session's scan found (release/redact.py), any of
    which left in the text is a finding, however it is cut."""
    out: list[Finding] = []
    markers = [m for m in local_markers if m]
    for i, line in enumerate(text.splitlines(), start=1):
        probe = line
        for v in allowed:
            if v and v in probe:
                probe = probe.replace(v, " ")
        for var, value in secrets.items():
            if value in probe:
                out.append(Finding(name, i, f"value of ${var}", _mask(value)))
        out += [Finding(name, i, hit.kind, "not shown") for hit in find_secrets(probe)]
        if found:
            out += [Finding(name, i, f"text of a {kind} the session's scan found",
                            "not shown") for kind in found.kinds_in(probe)]
        for m in URL.finditer(probe):
            try:
                host = urlparse(m.group(0)).hostname or ""
            except ValueError as e:  # "Invalid IPv6 URL": unreadable, so not released
                out.append(Finding(name, i, f"malformed URL ({e})", m.group(0)[:80]))
                continue
            if private_host(host):
                out.append(Finding(name, i, "private endpoint URL", m.group(0)[:80]))
        for m in ABSOLUTE_PATH.finditer(probe):
            if any(mark in m.group(0) for mark in markers):
                continue  # named once, below, as this checkout's or user's path
            out.append(Finding(name, i, "absolute local path", m.group(0)[:80]))
        for marker in markers:
            if marker in probe:
                out.append(Finding(name, i, "local path or user name", marker[:80]))
    return out


def local_markers(project_root: Path) -> list[str]:
    """Strings that identify this machine: the checkout's absolute path, the user's home,
    and user@ forms of the user's name (the bare name may be an ordinary word)."""
    user = getpass.getuser()
    marks = {str(project_root.resolve()), f"{user}@"}
    home = str(Path.home())
    if home not in ("/", "/root"):
        marks.add(home)
    return sorted(marks)


def scan_tree(root: Path, secrets: Mapping[str, str], allowed: set[str],
              markers: Iterable[str], found: SecretIndex | None = None) -> list[Finding]:
    out = []
    markers = list(markers)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES
                            or rel.parts[0] == PACKAGED_ARMS):  # a prompt: any name
            text = without_embedded_images(p.read_text(encoding="utf-8", errors="replace"))
            out += scan_text(rel.as_posix(), text, secrets, allowed, markers, found)
    return out


def without_embedded_images(text: str) -> str:
    """The text with each embedded image's base64 payload left out, its lines kept (so a
    finding after it keeps its line number)."""
    return EMBEDDED_IMAGE.sub(lambda m: m.group(1) + "\n" * m.group(0).count("\n"), text)


class ReleaseRefused(StudyError, RuntimeError):
    def __init__(self, findings: list[Finding]):
        self.findings = findings
        shown = "\n  ".join(map(str, findings[:50]))
        more = f"\n  … and {len(findings) - 50} more" if len(findings) > 50 else ""
        super().__init__(f"release refused: {len(findings)} finding(s)\n  {shown}{more}")
