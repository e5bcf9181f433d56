"""`kraftpy reassign`: move partitions between brokers, and replicas between a broker's log dirs
(kafka-reassign-partitions.sh, KIP-455 and KIP-113).

    kraftpy reassign --bootstrap-server H:P --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
    kraftpy reassign --bootstrap-server H:P --execute --reassignment-json-file plan.json
    kraftpy reassign --bootstrap-server H:P --verify --reassignment-json-file plan.json
    kraftpy reassign --bootstrap-server H:P --cancel --reassignment-json-file plan.json
    kraftpy reassign --bootstrap-server H:P --list

The files are Kafka's: `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3],
"log_dirs":["any","/data/d2"]}]}` and `{"version":1,"topics":[{"topic":"t"}]}`. --execute prints
the current assignment (keep it to roll back), starts the reassignments, then asks each broker
named with a log dir to put its replica there, retrying while the broker has no replica yet (up to
--timeout). --verify prints Kafka's status lines and exits 0 only once everything is done.
--generate only proposes (rack-unaware placement): nothing is changed. Nothing is submitted when
the file is malformed or names unknown topics, partitions or brokers.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.errors import Errors
from tools.cli._reassignment_json import (
    ReassignmentPlan,
    Replica,
    TopicPartition,
    check_for_execute,
    format_reassignment,
    parse_broker_list,
    parse_reassignment,
    parse_topics,
    propose,
    replica_name,
    tp_name,
)
from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, run

if TYPE_CHECKING:
    from tools.client.reassignments import ReassignAdmin

ACTIONS = ("execute", "verify", "cancel", "generate", "list")
EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this "
    "and create a new partition assignment in addition to the existing one. The --additional flag can also "
    "be used to change the throttle by resubmitting the current reassignment."
)
RETRY_S = 0.1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reassign",
        help="move partitions between brokers and replicas between log dirs (kafka-reassign-partitions)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bootstrap(p)
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--execute", action="store_true", help="start the reassignment in the JSON file")
    actions.add_argument("--verify", action="store_true", help="whether the reassignment in the file is done")
    actions.add_argument("--cancel", action="store_true", help="cancel the reassignments in the file")
    actions.add_argument("--generate", action="store_true", help="propose a reassignment of whole topics")
    actions.add_argument("--list", action="store_true", help="list every reassignment under way")
    p.add_argument("--reassignment-json-file", type=Path, metavar="FILE")
    p.add_argument("--topics-to-move-json-file", type=Path, metavar="FILE")
    p.add_argument("--broker-list", metavar="1,2,3", help="--generate: the brokers to place replicas on")
    p.add_argument("--disable-rack-aware", action="store_true", help="--generate: ignore brokers' racks")
    p.add_argument(
        "--additional", action="store_true", help="--execute while other reassignments are under way"
    )
    p.add_argument(
        "--timeout",
        type=int,
        default=30000,
        metavar="MS",
        help="how long to keep asking a broker to move a replica into its log dir while it has none yet "
        "(default 30000; Kafka's tool: 10000)",
    )
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    action = next(a for a in ACTIONS if getattr(args, a))
    needs = {
        "execute": ["reassignment_json_file"],
        "verify": ["reassignment_json_file"],
        "cancel": ["reassignment_json_file"],
        "generate": ["topics_to_move_json_file", "broker_list"],
        "list": [],
    }[action]
    for name in needs:
        if getattr(args, name) is None:
            raise UserError(f"--{action} needs --{name.replace('_', '-')}")
    # Every file is read and checked before anything is asked of the cluster.
    plan = (
        _read_plan(args.reassignment_json_file)
        if args.reassignment_json_file and action != "generate"
        else None
    )
    if action == "execute":
        assert plan is not None
        check_for_execute(plan)
        return run("reassign", lambda: _execute(args, plan))
    if action == "verify":
        assert plan is not None
        return run("reassign", lambda: _verify(args, plan))
    if action == "cancel":
        assert plan is not None
        return run("reassign", lambda: _cancel(args, plan))
    if action == "generate":
        topics = parse_topics(_read(args.topics_to_move_json_file))
        brokers = parse_broker_list(args.broker_list)
        return run("reassign", lambda: _generate(args, topics, brokers))
    return run("reassign", lambda: _list(args))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None


def _read_plan(path: Path) -> ReassignmentPlan:
    return parse_reassignment(_read(path), str(path))


def _admin(args: argparse.Namespace) -> ReassignAdmin:
    from tools.client.reassignments import ReassignAdmin

    return ReassignAdmin(args.bootstrap_server)


async def _current_assignment(
    admin: ReassignAdmin, tps: list[TopicPartition]
) -> dict[TopicPartition, list[int]]:
    """The partitions' replicas now; UserError naming the first unknown topic or the missing
    partitions (Kafka's getReplicaAssignmentForPartitions)."""
    topics = sorted({t for t, _ in tps})
    resp = await admin.describe(topics)
    by_name = {t.Name: t for t in resp.Topics}
    for name in topics:
        t = by_name.get(name)
        if t is None or t.ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            raise UserError(f"Topic {name} not found.")
        if t.ErrorCode:
            raise UserError(f"Topic {name}: {Errors(t.ErrorCode).name}")
    current = {
        (t.Name, p.PartitionIndex): list(p.ReplicaNodes) for t in resp.Topics if t.Name for p in t.Partitions
    }
    missing = [tp for tp in tps if tp not in current]
    if missing:
        raise UserError("Unable to find partition: " + ", ".join(tp_name(tp) for tp in missing))
    return {tp: current[tp] for tp in tps}


async def _execute(args: argparse.Namespace, plan: ReassignmentPlan) -> int:
    targets = plan.targets
    async with _admin(args) as admin:
        if not args.additional and await admin.list_partition_reassignments():
            raise UserError(EXISTING)
        alive = {b.NodeId for b in (await admin.describe([])).Brokers}
        unknown = next((b for _, rs in plan.partitions for b in rs if b not in alive), None)
        if unknown is not None:
            raise UserError(f"Unknown broker id {unknown}")
        current = await _current_assignment(admin, list(targets))
        print("Current partition replica assignment\n")
        print(format_reassignment(current))
        print("\nSave this to use as the --reassignment-json-file option during rollback")
        results = await admin.alter_partition_reassignments(targets)
        failed = {tp: r for tp, r in results.items() if r[0] is not Errors.NONE}
        if failed:
            print("Error reassigning partition(s):", file=sys.stderr)
            for tp in sorted(failed):
                code, message = failed[tp]
                print(f"{tp_name(tp)}: {message or code.name} ({code.name})", file=sys.stderr)
            return 1
        names = ",".join(tp_name(tp) for tp in sorted(targets))
        print(f"Successfully started partition reassignment{'' if len(targets) == 1 else 's'} for {names}")
        if plan.log_dirs:
            return await _move_to_dirs(admin, plan.log_dirs, args.timeout / 1000)
    return 0


async def _move_to_dirs(admin: ReassignAdmin, wanted: dict[Replica, str], timeout_s: float) -> int:
    """AlterReplicaLogDirs for each replica to its broker until every one is accepted. A replica the
    broker does not have yet (REPLICA_NOT_AVAILABLE: it is still being created) is asked again,
    as Kafka's tool does, until `timeout_s`."""
    pending = dict(wanted)
    deadline = time.monotonic() + timeout_s
    while True:
        by_broker: dict[int, dict[TopicPartition, str]] = {}
        for (topic, partition, broker), path in pending.items():
            by_broker.setdefault(broker, {})[(topic, partition)] = path
        for broker, moves in sorted(by_broker.items()):
            results = await admin.alter_replica_log_dirs(broker, moves)
            for (topic, partition), path in sorted(moves.items()):
                replica = (topic, partition, broker)
                code = results.get((topic, partition), Errors.UNKNOWN_SERVER_ERROR)
                if code is Errors.NONE:
                    print(
                        f"Successfully started moving log directory to {path} for replica "
                        f"{topic}-{partition} with broker {broker} "
                    )
                    del pending[replica]
                elif code is not Errors.REPLICA_NOT_AVAILABLE:
                    print(f"Failed to alter dir for {replica_name(replica)}: {code.name}", file=sys.stderr)
                    return 1
        if not pending:
            return 0
        if time.monotonic() >= deadline:
            names = ",".join(replica_name(r) for r in sorted(pending, key=lambda r: (r[2], r[0], r[1])))
            print(
                f"Timed out before log directory move{'' if len(pending) == 1 else 's'} could be started for: {names}",
                file=sys.stderr,
            )
            return 1
        await asyncio.sleep(RETRY_S)


async def _verify(args: argparse.Namespace, plan: ReassignmentPlan) -> int:
    async with _admin(args) as admin:
        ongoing = await admin.list_partition_reassignments()
        others = [tp for tp, _ in plan.partitions if tp not in ongoing]
        topics = sorted({t for t, _ in others})
        resp = await admin.describe(topics) if topics else None
        now = {
            (t.Name, p.PartitionIndex): list(p.ReplicaNodes)
            for t in (resp.Topics if resp is not None else [])
            if t.Name and not t.ErrorCode
            for p in t.Partitions
        }
        lines = ["Status of partition reassignment:"]
        done = True
        for tp, target in sorted(plan.partitions):
            if tp in ongoing:
                lines.append(f"Reassignment of partition {tp_name(tp)} is still in progress.")
                done = False
            elif now.get(tp, []) == target:
                lines.append(f"Reassignment of partition {tp_name(tp)} is completed.")
            else:
                current = ",".join(map(str, now.get(tp, [])))
                lines.append(
                    f"There is no active reassignment of partition {tp_name(tp)}, but replica set is "
                    f"{current} rather than {','.join(map(str, target))}."
                )
                done = False
        print("\n".join(lines))
        dirs_done, text = await _dir_move_states(admin, plan.log_dirs)
        print(text)
    return 0 if done and dirs_done else 1


async def _dir_move_states(admin: ReassignAdmin, wanted: dict[Replica, str]) -> tuple[bool, str]:
    """Kafka's replicaMoveStatesToString for the wanted log dirs, and whether every move is done."""
    found = await admin.replica_log_dirs(wanted) if wanted else {}
    lines = []
    done = True
    for replica in sorted(wanted, key=lambda r: (r[2], r[0], r[1])):
        target = wanted[replica]
        topic, partition, broker = replica
        info = found.get(replica)
        if info is None:
            lines.append(
                f"Partition {topic}-{partition} cannot be found in any live log directory on broker {broker}."
            )
        elif info.current is None:
            lines.append(
                f"Partition {topic}-{partition} is not found in any live log dir on broker {broker}. "
                "There is likely an offline log directory on the broker."
            )
        elif info.future is not None:
            if info.future == target:
                lines.append(f"Reassignment of replica {replica_name(replica)} is still in progress.")
            else:
                lines.append(
                    f"Partition {topic}-{partition} on broker {broker} is being moved to log dir "
                    f"{info.future} instead of {target}."
                )
        elif info.current == target:
            lines.append(f"Reassignment of replica {replica_name(replica)} completed successfully.")
            continue
        else:
            lines.append(
                f"Partition {topic}-{partition} on broker {broker} is not being moved from log dir "
                f"{info.current} to {target}."
            )
        done = False
    return done, "\n".join(lines)


async def _cancel(args: argparse.Namespace, plan: ReassignmentPlan) -> int:
    async with _admin(args) as admin:
        ongoing = await admin.list_partition_reassignments(tp for tp, _ in plan.partitions)
        if ongoing:
            results = await admin.alter_partition_reassignments(dict.fromkeys(ongoing))
            failed = {tp: r for tp, r in results.items() if r[0] is not Errors.NONE}
            if failed:
                print(
                    f"Error cancelling partition reassignment{'' if len(failed) == 1 else 's'} for:",
                    file=sys.stderr,
                )
                for tp in sorted(failed):
                    code, message = failed[tp]
                    print(f"{tp_name(tp)}: {message or code.name} ({code.name})", file=sys.stderr)
                return 1
            names = ",".join(tp_name(tp) for tp in sorted(ongoing))
            print(
                f"Successfully cancelled partition reassignment{'' if len(ongoing) == 1 else 's'} for: {names}"
            )
        else:
            print("None of the specified partition reassignments are active.")
        # A replica moving between dirs goes back to the dir it is in (its future log is dropped).
        found = await admin.replica_log_dirs(plan.log_dirs) if plan.log_dirs else {}
        back: dict[Replica, str] = {}
        for replica, info in found.items():
            if info.future is not None and info.current is not None:
                back[replica] = info.current
        if not back:
            print("None of the specified partition moves are active.")
            return 0
        return await _move_to_dirs(admin, back, args.timeout / 1000)


async def _generate(args: argparse.Namespace, topics: list[str], brokers: list[int]) -> int:
    async with _admin(args) as admin:
        resp = await admin.describe(topics)
        by_name = {t.Name: t for t in resp.Topics}
        for name in topics:
            t = by_name.get(name)
            if t is None or t.ErrorCode:
                raise UserError(f"Topic {name} not found.")
        alive = {b.NodeId: b.Rack for b in resp.Brokers}
    current = {
        (t.Name, p.PartitionIndex): list(p.ReplicaNodes) for t in resp.Topics if t.Name for p in t.Partitions
    }
    chosen = [b for b in brokers if b in alive]
    if not args.disable_rack_aware and any(alive[b] for b in chosen):
        raise UserError(
            "the brokers have racks and kraftpy's --generate places without them: pass --disable-rack-aware"
        )
    proposed = propose(current, chosen, random.Random())
    print(f"Current partition replica assignment\n{format_reassignment(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment(proposed)}")
    return 0


async def _list(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        ongoing = await admin.list_partition_reassignments()
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp in sorted(ongoing):
        o = ongoing[tp]
        line = f"{tp_name(tp)}: replicas: {','.join(map(str, o.replicas))}."
        if o.adding:
            line += f" adding: {','.join(map(str, o.adding))}."
        if o.removing:
            line += f" removing: {','.join(map(str, o.removing))}."
        print(line)
    return 0
