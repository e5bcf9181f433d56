"""Scripted controller interactions, in the style of etcd raft's datadriven tests.

A script (tests/controller/testdata/*.txt) is a list of stanzas:

    # comments and blank lines between stanzas are kept
    register-broker 1 dirs=(a,b)
    ----
    response ErrorCode=0 BrokerEpoch=4
    @4 RegisterBrokerRecord v3 BrokerId=1 ...

The command runs against a ControlTestContext; what it printed must equal the text after `----`
(up to the next blank line). Records print as `@offset Name vVersion field=value...` with fields
left out when they hold the record's default, directories by their script names and topic ids by
topic name. To regenerate expected output after a deliberate change, run

    .venv/bin/python -m tests.controller.scripted --rewrite [files...]

(or set KRAFTPY_REWRITE=1 for the pytest run) and review the diff.

Commands: `new [mv=N] [session=MS] [unclean=true]`, `register-broker ID dirs=(a,b) [new-incarnation]
[rack=R]`, `heartbeat ID [offline=(a)] [fence] [shutdown] [offset=N] [epoch=N]`, `advance-clock 9s|250ms`,
`fence-stale`, `create-topic NAME [partitions=N] [rf=N] [assignment=(1,2;2,1)] [configs=(k=v)]`,
`delete-topic NAME`, `assign BROKER DIR TOPIC-P...`, `alter-partition TOPIC-P isr=(1,2)`,
`elect preferred|online|unclean`, `noop`, `partitions [TOPIC]`, `brokers`.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from controller.core.partition_change import Election
from protocol.framing import ApiMessageAndVersion
from protocol.uuid import Uuid
from tests.controller.control_context import ControlTestContext

TESTDATA = Path(__file__).parent / "testdata"

# Fields printed even when they hold the record's default, because a reader looks for them.
ALWAYS_SHOWN = {"PartitionRecord": ("Leader",)}


@dataclass
class Stanza:
    comments: list[str]
    command: str
    expected: str
    line: int


def parse(text: str) -> tuple[list[Stanza], list[str]]:
    """The stanzas, and the comment lines after the last one."""
    stanzas: list[Stanza] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    comments: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            comments.append(line)
            i += 1
            continue
        start = i
        i += 1
        if i >= len(lines) or lines[i] != "----":
            raise ValueError(f"line {start + 1}: expected ---- after the command {line!r}")
        i += 1
        out = []
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        i += 1  # the blank line that ends the output
        stanzas.append(Stanza(comments, line, "\n".join(out), start + 1))
        comments = []
    return stanzas, comments


def render(stanzas: list[Stanza], outputs: list[str], trailing: list[str]) -> str:
    parts: list[str] = []
    for stanza, out in zip(stanzas, outputs, strict=True):
        parts.extend(stanza.comments)
        parts.append(stanza.command)
        parts.append("----")
        if out:
            parts.append(out)
        parts.append("")
    parts.extend(trailing)
    return "\n".join(parts).rstrip("\n") + "\n"


# ---- running -------------------------------------------------------------------------------


def _args(words: list[str]) -> tuple[list[str], dict[str, str]]:
    positional, named = [], {}
    for w in words:
        if "=" in w:
            k, v = w.split("=", 1)
            named[k] = v
        else:
            positional.append(w)
    return positional, named


def _list(value: str) -> list[str]:
    value = value.strip()
    if value.startswith("(") and value.endswith(")"):
        value = value[1:-1]
    return [v for v in value.split(",") if v]


def _duration_ms(text: str) -> int:
    m = re.fullmatch(r"(\d+)(ms|s|m)", text)
    if not m:
        raise ValueError(f"bad duration {text!r}")
    n, unit = int(m.group(1)), m.group(2)
    return n * {"ms": 1, "s": 1000, "m": 60_000}[unit]


def _tp(ctx: ControlTestContext, text: str) -> tuple[str, int]:
    name, _, pid = text.rpartition("-")
    return name, int(pid)


class Runner:
    def __init__(self) -> None:
        self.ctx = ControlTestContext()
        self.commands: dict[str, Callable[[list[str], dict[str, str]], Any]] = {
            "new": self.new,
            "register-broker": self.register_broker,
            "heartbeat": self.heartbeat,
            "advance-clock": self.advance_clock,
            "fence-stale": self.fence_stale,
            "create-topic": self.create_topic,
            "delete-topic": self.delete_topic,
            "assign": self.assign,
            "alter-partition": self.alter_partition,
            "elect": self.elect,
            "noop": self.noop,
            "partitions": self.partitions,
            "brokers": self.brokers,
        }

    def run(self, command: str) -> str:
        words = shlex.split(command)
        handler = self.commands.get(words[0])
        if handler is None:
            raise ValueError(f"unknown command {words[0]!r}")
        positional, named = _args(words[1:])
        start = self.ctx.next_offset
        out = handler(positional, named)
        if isinstance(out, str):
            return out
        lines = []
        if out is not None:
            lines.append("response " + self.value(out.response))
            for i, record in enumerate(out.records):
                lines.append(self.record_line(start + i, record))
        return "\n".join(lines)

    # -- rendering --

    def uuid(self, u: Uuid) -> str:
        if u in self.ctx.dir_names:
            return self.ctx.dir_names[u]
        if u in self.ctx.topic_names:
            return self.ctx.topic_names[u]
        return str(u)

    def key(self, k: Any) -> str:
        if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], Uuid):
            return f"{self.uuid(k[0])}-{k[1]}"
        return self.value(k)

    def value(self, v: Any) -> str:
        if isinstance(v, Uuid):
            return self.uuid(v)
        if isinstance(v, list | tuple):
            return (
                "["
                + ",".join(
                    "{" + self.value(x) + "}" if isinstance(x, BaseModel) else self.value(x) for x in v
                )
                + "]"
            )
        if isinstance(v, dict):
            return "{" + " ".join(f"{self.key(k)}={self.value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, BaseModel):
            fields = {k: getattr(v, k) for k in type(v).model_fields if k != "ThrottleTimeMs"}
            return " ".join(f"{k}={self.value(x)}" for k, x in fields.items())
        if hasattr(v, "_FIELD_NAMES"):
            return "{" + " ".join(f"{k}={self.value(getattr(v, k))}" for k in v._FIELD_NAMES) + "}"
        return str(v)

    def record_line(self, offset: int, record: ApiMessageAndVersion) -> str:
        msg = record.message
        default = type(msg)()
        always = ALWAYS_SHOWN.get(type(msg).__name__, ())
        fields = [
            f"{k}={self.value(getattr(msg, k))}"
            for k in msg._FIELD_NAMES
            if k in always or getattr(msg, k) != getattr(default, k)
        ]
        return f"@{offset} {type(msg).__name__} v{record.version} {' '.join(fields)}".rstrip()

    # -- commands --

    def new(self, pos: list[str], kw: dict[str, str]) -> str:
        self.ctx = ControlTestContext(
            int(kw.get("mv", "21")),
            session_timeout_ms=int(kw.get("session", "9000")),
            unclean_leader_election_enable=kw.get("unclean") == "true",
        )
        return f"bootstrapped at metadata.version {self.ctx.core.metadata_version}, next offset {self.ctx.next_offset}"

    def register_broker(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.register(
            int(pos[0]),
            _list(kw.get("dirs", "(a)")),
            new_incarnation="new-incarnation" in pos[1:],
            rack=kw.get("rack"),
        )

    def heartbeat(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.heartbeat(
            int(pos[0]),
            want_fence="fence" in pos[1:],
            want_shut_down="shutdown" in pos[1:],
            offline=_list(kw.get("offline", "()")),
            offset=int(kw["offset"]) if "offset" in kw else None,
            epoch=int(kw["epoch"]) if "epoch" in kw else None,
        )

    def advance_clock(self, pos: list[str], kw: dict[str, str]) -> str:
        self.ctx.advance(_duration_ms(pos[0]))
        return f"now {self.ctx.now_ms}"

    def fence_stale(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.fence_stale()

    def create_topic(self, pos: list[str], kw: dict[str, str]) -> Any:
        assignment = None
        if "assignment" in kw:
            text = kw["assignment"].strip("()")
            assignment = [[int(b) for b in part.split(",")] for part in text.split(";")]
        configs = dict(c.split(":", 1) for c in _list(kw.get("configs", "()")))
        result = self.ctx.create_topic(
            pos[0],
            int(kw.get("partitions", "1")),
            int(kw.get("rf", "1")),
            assignment=assignment,
            configs=configs,
        )
        return result

    def delete_topic(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.delete_topic(pos[0])

    def assign(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.assign(int(pos[0]), pos[1], [_tp(self.ctx, t) for t in pos[2:]])

    def alter_partition(self, pos: list[str], kw: dict[str, str]) -> Any:
        topic, pid = _tp(self.ctx, pos[0])
        return self.ctx.alter_partition(topic, pid, [int(b) for b in _list(kw["isr"])])

    def elect(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.apply(self.ctx.core.elect_leaders(Election(pos[0])))

    def noop(self, pos: list[str], kw: dict[str, str]) -> Any:
        return self.ctx.apply(self.ctx.core.noop())

    def partitions(self, pos: list[str], kw: dict[str, str]) -> str:
        lines = []
        replication = self.ctx.core.m.replication
        for name in sorted(replication.topics_by_name):
            if pos and name != pos[0]:
                continue
            topic = replication.topics[replication.topics_by_name[name]]
            for pid in sorted(topic.partitions):
                p = topic.partitions[pid]
                lines.append(
                    f"{name}-{pid} replicas={self.value(p.replicas)} dirs={self.value(p.directories)} "
                    f"isr={self.value(p.isr)} leader={p.leader} leader_epoch={p.leader_epoch} "
                    f"partition_epoch={p.partition_epoch}"
                )
        return "\n".join(lines)

    def brokers(self, pos: list[str], kw: dict[str, str]) -> str:
        lines = []
        for b, r in sorted(self.ctx.core.m.cluster.registrations.items()):
            state = "fenced" if r.fenced else "unfenced"
            if r.in_controlled_shutdown:
                state += ",controlled-shutdown"
            lines.append(
                f"broker {b} epoch={r.epoch} {state} online={self.value(r.directories)} registered={self.value(sorted(r.registered_directories))}"
            )
        return "\n".join(lines)


def run_file(path: Path) -> tuple[list[Stanza], list[str]]:
    stanzas, _ = parse(path.read_text())
    runner = Runner()
    outputs = []
    for stanza in stanzas:
        try:
            outputs.append(runner.run(stanza.command))
        except Exception as e:
            raise AssertionError(f"{path.name}:{stanza.line}: {stanza.command!r} failed: {e!r}") from e
    return stanzas, outputs


def rewrite(path: Path) -> bool:
    """Regenerate the expected output; returns whether the file changed."""
    stanzas, outputs = run_file(path)
    text = render(stanzas, outputs, parse(path.read_text())[1])
    changed = text != path.read_text()
    if changed:
        path.write_text(text)
    return changed


def rewrite_requested() -> bool:
    return os.environ.get("KRAFTPY_REWRITE") == "1"


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv if not a.startswith("--")] or sorted(TESTDATA.glob("*.txt"))
    if "--rewrite" not in argv:
        print("usage: python -m tests.controller.scripted --rewrite [files...]", file=sys.stderr)
        return 2
    for f in files:
        print(f"{f}: {'rewritten' if rewrite(f) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
