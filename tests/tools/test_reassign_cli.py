"""`kraftpy reassign` without a cluster: Kafka's JSON read and written exactly, the checks that keep
a bad file from submitting anything, and --generate's placement."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tools.cli._reassignment_json import (
    ReassignmentPlan,
    check_for_execute,
    format_reassignment,
    parse_broker_list,
    parse_reassignment,
    parse_topics,
    propose,
)
from tools.cli.errors import UserError
from tools.cli.main import main

PLAN = {
    "version": 1,
    "partitions": [
        {"topic": "t", "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "/data/d1"]},
        {"topic": "t", "partition": 1, "replicas": [3, 1]},
    ],
}


def test_a_kafka_reassignment_file_reads_with_its_log_dirs() -> None:
    plan = parse_reassignment(json.dumps(PLAN))
    assert plan.partitions == [(("t", 0), [2, 3]), (("t", 1), [3, 1])]
    assert plan.log_dirs == {("t", 0, 3): "/data/d1"}, "'any' and a missing log_dirs ask for no dir"


def test_version_defaults_to_1_and_nothing_else_is_read() -> None:
    assert parse_reassignment('{"partitions": []}').partitions == []
    with pytest.raises(UserError, match="Not supported version field value 2"):
        parse_reassignment('{"version": 2, "partitions": []}')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"partitions": {}}', '"partitions" must be a list'),
        ('{"partitions": [{"partition": 0, "replicas": [1]}]}', 'has no "topic"'),
        (
            '{"partitions": [{"topic": "t", "partition": "0", "replicas": [1]}]}',
            "partition must be an integer",
        ),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, "x"]}]}',
            "replicas must be an integer",
        ),
        ('{"partitions": [{"topic": "t", "partition": 0, "replicas": 1}]}', "must be a list of broker ids"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]}',
            r"Size of replicas list \[1, 2\] is different from size of log dirs list \['any'\] for partition t-0",
        ),
    ],
)
def test_malformed_files_are_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_reassignment(text)


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        ([], "Partition reassignment list cannot be empty"),
        ([(("t", 0), [])], "Partition replica list cannot be empty"),
        ([(("t", 0), [1]), (("t", 0), [2])], "duplicate topic partitions: t-0"),
        ([(("t", 0), [1, 2, 1])], "may not contain duplicate entries: t-0 contains multiple entries for 1"),
    ],
)
def test_execute_refuses_what_kafka_refuses(partitions: list, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UserError, match=message):
        check_for_execute(ReassignmentPlan(partitions))


def test_the_json_written_is_kafkas() -> None:
    text = format_reassignment({("t", 1): [3, 1], ("a", 0): [1], ("t", 0): [2, 3]}, {("t", 0, 3): "/data/d1"})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"t","partition":0,"replicas":[2,3],"log_dirs":["any","/data/d1"]},'
        '{"topic":"t","partition":1,"replicas":[3,1],"log_dirs":["any","any"]}]}'
    )
    plan = parse_reassignment(text)
    assert format_reassignment(plan.targets, plan.log_dirs) == text


def test_topics_file_and_broker_list() -> None:
    assert parse_topics('{"version": 1, "topics": [{"topic": "a"}, {"topic": "b"}]}') == ["a", "b"]
    with pytest.raises(UserError, match="duplicate entries: a"):
        parse_topics('{"topics": [{"topic": "a"}, {"topic": "a"}]}')
    with pytest.raises(UserError, match=r"topics\[0\]"):
        parse_topics('{"topics": [{"name": "a"}]}')
    assert parse_broker_list("1,2, 3") == [1, 2, 3]
    with pytest.raises(UserError, match="duplicate entries: 2"):
        parse_broker_list("1,2,2")
    with pytest.raises(UserError, match="comma-separated"):
        parse_broker_list("1,x")


def test_generate_places_each_topic_on_the_given_brokers_with_its_replication_factor() -> None:
    current = {("a", p): [1, 2] for p in range(4)} | {("b", 0): [1, 2, 3]}
    proposed = propose(current, [3, 4, 5], random.Random(1))
    assert sorted(proposed) == sorted(current)
    for tp, replicas in proposed.items():
        assert len(replicas) == len(current[tp]) and len(set(replicas)) == len(replicas)
        assert set(replicas) <= {3, 4, 5}
    # Leaders go round the brokers, as AdminUtils places them.
    assert sorted(proposed[("a", p)][0] for p in range(3)) == [3, 4, 5]
    assert propose(current, [3, 4, 5], random.Random(1)) == proposed
    with pytest.raises(UserError, match="topic b: Replication factor: 3 larger than available brokers: 2"):
        propose(current, [4, 5], random.Random(1))


def _cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    # Port 1 answers nothing: a command that got as far as the cluster would fail with exit 1.
    code = main(["reassign", "--bootstrap-server", "127.0.0.1:1", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_bad_file_is_refused_before_the_cluster_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}')
    code, out, err = _cli(tmp_path, capsys, "--execute", "--reassignment-json-file", str(bad))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "multiple entries for 1" in err and "Traceback" not in err
    code, _, err = _cli(
        tmp_path, capsys, "--verify", "--reassignment-json-file", str(tmp_path / "missing.json")
    )
    assert code == 2 and "cannot read" in err
    code, _, err = _cli(tmp_path, capsys, "--execute")
    assert code == 2 and "--execute needs --reassignment-json-file" in err
    code, _, err = _cli(tmp_path, capsys, "--generate", "--broker-list", "1,2")
    assert code == 2 and "--topics-to-move-json-file" in err


def test_one_action_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reassign", "--execute", "--verify", "--reassignment-json-file", "x"])
    assert e.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
