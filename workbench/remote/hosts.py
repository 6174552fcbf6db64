"""Remote GPU hosts as the user configured them: `ssh://[user@]host[:port]`, an identity file,
the remote Python command and the remote base folder. Stored as JSON in the user's settings
(`$WB_HOSTS_FILE`, else `hosts.json` in `$WB_CONFIG_DIR`, else in the platform's user config
folder, `~/.config/rust-gpu-workbench`). No password is ever stored: authentication is the ssh
client's (keys, agents, `~/.ssh/config`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from workbench.errors import WorkbenchError
from workbench.user_folders import user_config_dir

#: The remote base folder (relative paths are relative to the remote home).
DEFAULT_REMOTE_DIR = ".cache/rust-gpu-workbench"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class HostError(WorkbenchError):
    """A host that is unknown, badly written or unreachable; the message says what to do."""


@dataclass
class Host:
    name: str
    hostname: str
    user: str | None = None
    port: int | None = None
    identity: str | None = None
    #: The remote command that runs the workbench's Python (a shell fragment, e.g.
    #: `python3` or `env PYTHONPATH=/src /opt/venv/bin/python`); `hosts setup` sets it to its venv.
    python: str = "python3"
    #: Extra `ssh -o` options (`UserKnownHostsFile=/path`, `ProxyJump=gw`), given first so they win.
    ssh_options: list[str] = field(default_factory=list)
    remote_dir: str = DEFAULT_REMOTE_DIR
    #: The Python `hosts setup` made the venv with (set by setup; reused when it runs again).
    setup_python: str | None = None

    @property
    def url(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"ssh://{user}{self.hostname}{port}"

    def to_dict(self) -> dict:
        return dict(asdict(self), url=self.url)

    @classmethod
    def from_dict(cls, data: dict) -> Host:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def parse_url(url: str) -> tuple[str | None, str, int | None]:
    """`ssh://[user@]host[:port]` (or `[user@]host`) → (user, host, port); errors say why."""
    text = url.strip()
    if "://" not in text:
        text = "ssh://" + text
    parts = urlsplit(text)
    if parts.scheme != "ssh":
        raise HostError(f"host address {url!r}: expected ssh://[user@]host[:port]")
    try:
        port = parts.port
    except ValueError:
        raise HostError(f"host address {url!r}: the port is not a number from 1 to 65535") from None
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.password:
        raise HostError(f"host address {url!r}: expected ssh://[user@]host[:port] (no password, no path)")
    return parts.username or None, parts.hostname, port


def hosts_file() -> Path:
    """$WB_HOSTS_FILE, else `hosts.json` in the user config folder (`user_folders.user_config_dir`)."""
    if os.environ.get("WB_HOSTS_FILE"):
        return Path(os.environ["WB_HOSTS_FILE"]).expanduser()
    return user_config_dir() / "hosts.json"


class HostStore:
    """The configured hosts, read from and written to `hosts_file()` (atomic replace)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else hosts_file()

    def load(self) -> dict[str, Host]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise HostError(f"cannot read the hosts file {self.path}: {exc}") from None
        hosts = data.get("hosts", {}) if isinstance(data, dict) else {}
        return {name: Host.from_dict(dict(entry, name=name)) for name, entry in hosts.items()}

    def save(self, hosts: dict[str, Host]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "format": 1,
            "hosts": {n: {k: v for k, v in asdict(h).items() if k != "name"} for n, h in hosts.items()},
        }
        fd, tmp = tempfile.mkstemp(prefix=".hosts-", dir=self.path.parent)
        with os.fdopen(fd, "w") as out:
            json.dump(body, out, indent=2)
            out.write("\n")
        os.replace(tmp, self.path)

    def get(self, name: str) -> Host:
        hosts = self.load()
        if name not in hosts:
            known = ", ".join(sorted(hosts)) or "none"
            raise HostError(
                f"no host named {name!r} (configured: {known}); add one with "
                f"`workbench hosts add {name} ssh://user@host`"
            )
        return hosts[name]

    def names(self) -> list[str]:
        try:
            return sorted(self.load())
        except HostError:
            return []

    def add(self, host: Host, replace: bool = False) -> None:
        if not NAME_RE.match(host.name):
            raise HostError(
                f"host name {host.name!r}: use letters, digits, '.', '_' or '-' (it prefixes device "
                f"specs, e.g. {host.name}/cuda:0, so no '/' or ':')"
            )
        hosts = self.load()
        if host.name in hosts and not replace:
            raise HostError(
                f"a host named {host.name!r} exists already ({hosts[host.name].url}); remove it first"
            )
        hosts[host.name] = host
        self.save(hosts)

    def update(self, host: Host) -> None:
        hosts = self.load()
        hosts[host.name] = host
        self.save(hosts)

    def remove(self, name: str) -> Host:
        hosts = self.load()
        host = self.get(name)
        del hosts[name]
        self.save(hosts)
        return host


def split_spec(spec: str, names: list[str] | None = None) -> tuple[str | None, str]:
    """`lo/cuda:0` → ("lo", "cuda:0"); `cuda:0` → (None, "cuda:0"). With `names`, a prefix that is
    no configured host is an error naming the hosts."""
    head, sep, rest = spec.strip().partition("/")
    if not sep:
        return None, spec.strip()
    if names is not None and head not in names:
        known = ", ".join(names) or "none"
        raise HostError(f"device {spec!r}: no host named {head!r} (configured hosts: {known})")
    return head, rest
