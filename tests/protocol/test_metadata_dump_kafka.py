"""`kraftpy metadata dump PATH` prints what `kafka-dump-log.sh --cluster-metadata-decoder --files PATH`
prints (kafka.tools.DumpLogSegments, Kafka 3.9); `--format kraftpy` and `--json` keep our own outputs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.control_records import (
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    UnknownControlRecord,
    VotersRecord,
)
from protocol.framing import ApiMessageAndVersion, decode_record
from protocol.log_files import classify, iter_entries
from protocol.metadata_records import ClientQuotaRecord, NoOpRecord, UnknownRecord
from protocol.record_batch import build_control_batch, build_metadata_batch
from protocol.uuid import Uuid
from tools.cli.main import main

REPO = Path(__file__).resolve().parents[2]
LDI_SEGMENT = Path("LDI-POC_16c4da1") / "__cluster_metadata-0" / "00000000000000000000.log"
TINY_SEGMENT = Path("otus_kafka_main_b4c7710") / "__cluster_metadata-0" / "00000000000000000000.log"
HW02_SNAPSHOT = (
    Path("otus_kafka_HW02_d9e6ebb") / "__cluster_metadata-0" / "00000000000000008931-0000000023.checkpoint"
)

# The first 8 batches of LDI-POC's segment (a bitnami Kafka 3.7.0 node), read off `xxd` of the file
# and laid out by DumpLogSegments.printBatchLevel and dumpLog's record loop:
# - baseOffset: bytes 0-7 of the batch; lastOffset = baseOffset + lastOffsetDelta (bytes 23-26);
#   count: bytes 57-60; baseSequence/producerId/producerEpoch: -1 (bytes 53-56, 43-50, 51-52);
#   lastSequence -1 because baseSequence is -1; partitionLeaderEpoch: bytes 12-15 (1);
# - isTransactional / isControl: attribute bits 4 / 5 (attributes 0x0020 on the control batch,
#   0 elsewhere); deleteHorizonMs: OptionalLong.empty (attribute bit 6 clear);
# - position: the sum of the sizes before it; CreateTime: maxTimestamp (bytes 35-42, CreateTime as
#   attribute bit 3 is clear); size: 12 + the length field (bytes 8-11); compresscodec: none
#   (attribute bits 0-2); crc: bytes 17-20 read as an unsigned int; isvalid: true (CRC-32C holds).
# - Records: offset = baseOffset + offsetDelta; CreateTime = baseTimestamp + timestampDelta (0);
#   keySize -1 (null key) on data records, 4 on the control record; valueSize the value's varint
#   length; sequence -1; no headers.
# - Batch 0, control record key 00 00 00 02: LEADER_CHANGE, printed as `controlType: LEADER_CHANGE(2)`.
# - Data record payloads: {"type": MetadataRecordType name, "version", "data": JsonConverter},
#   decoded from the frame (01 apiKey version) and fields, e.g. at 0x131: 01 1b 00 = type 27 v0,
#   RegisterControllerRecord; uuids 6b3e3096..bb0c, b5ae51e1..fd86, 5c7864af..4f7e as base64url
#   give az4wlldxQLeL13q7t6G7DA, ta5R4VtUQvagltuIzSD9hg, XHhkr4tkSsD900pOQ8pPfg;
#   RegisterBrokerRecord v3 carries tagged LogDirs (tag 0, one uuid), so logDirs is written;
#   BrokerRegistrationChangeRecord carries tagged Fenced = 0xff = -1 (default 0), so fenced is written.
LDI_GOLDEN = [
    "Log starting offset: 0",
    # batch 0 @0: length 0x4f -> size 91, crc 0xe56b38b5, timestamp 0x19c0fca2e6d, control
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true "
    "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1769791434349 size: 91 magic: 2 "
    "compresscodec: none crc: 3849009333 isvalid: true",
    "| offset: 0 CreateTime: 1769791434349 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
    "controlType: LEADER_CHANGE(2)",
    # batch 1 @91: length 0x85 -> 145, crc 0xe61bc763, timestamp 0x19c0fca2f31, lastOffsetDelta 3
    "baseOffset: 1 lastOffset: 4 count: 4 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 91 CreateTime: 1769791434545 size: 145 magic: 2 "
    "compresscodec: none crc: 3860580195 isvalid: true",
    # value 01 17 00 01 00 12 12 "Bootstrap records": BeginTransactionRecord, tagged Name (tag 0)
    "| offset: 1 CreateTime: 1769791434545 keySize: -1 valueSize: 24 sequence: -1 headerKeys: [] "
    'payload: {"type":"BEGIN_TRANSACTION_RECORD","version":0,"data":{"name":"Bootstrap records"}}',
    # value 01 0c 00 11 "metadata.version" 00 13 00: FeatureLevelRecord, level 0x13 = 19
    "| offset: 2 CreateTime: 1769791434545 keySize: -1 valueSize: 23 sequence: -1 headerKeys: [] "
    'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":19}}',
    # value 01 15 00 00 00: ZkMigrationStateRecord, state 0
    "| offset: 3 CreateTime: 1769791434545 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] "
    'payload: {"type":"ZK_MIGRATION_STATE_RECORD","version":0,"data":{"zkMigrationState":0}}',
    # value 01 18 00 00: EndTransactionRecord
    "| offset: 4 CreateTime: 1769791434545 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
    'payload: {"type":"END_TRANSACTION_RECORD","version":0,"data":{}}',
    # batch 2 @236: length 0x88 -> 148, crc 0xef794d43, timestamp 0x19c0fca2fbe; value length 9c 01 -> 78
    "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 236 CreateTime: 1769791434686 size: 148 magic: 2 "
    "compresscodec: none crc: 4017704259 isvalid: true",
    "| offset: 5 CreateTime: 1769791434686 keySize: -1 valueSize: 78 sequence: -1 headerKeys: [] "
    'payload: {"type":"REGISTER_CONTROLLER_RECORD","version":0,"data":{"controllerId":1,'
    '"incarnationId":"az4wlldxQLeL13q7t6G7DA","zkMigrationReady":false,"endPoints":[{"name":"CONTROLLER",'
    '"host":"e06a9e9dd037","port":9093,"securityProtocol":0}],"features":[{"name":"metadata.version",'
    '"minSupportedVersion":1,"maxSupportedVersion":19}]}}',
    # batch 3 @384: length 0x9e -> 170, crc 0x1fb37a96, timestamp 0x19c0fca3097; value length c8 01 -> 100
    "baseOffset: 6 lastOffset: 6 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 384 CreateTime: 1769791434903 size: 170 magic: 2 "
    "compresscodec: none crc: 531856022 isvalid: true",
    "| offset: 6 CreateTime: 1769791434903 keySize: -1 valueSize: 100 sequence: -1 headerKeys: [] "
    'payload: {"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":1,"isMigratingZkBroker":false,'
    '"incarnationId":"ta5R4VtUQvagltuIzSD9hg","brokerEpoch":6,"endPoints":[{"name":"PLAINTEXT",'
    '"host":"kafka","port":9092,"securityProtocol":0}],"features":[{"name":"metadata.version",'
    '"minSupportedVersion":1,"maxSupportedVersion":19}],"rack":null,"fenced":true,'
    '"inControlledShutdown":false,"logDirs":["XHhkr4tkSsD900pOQ8pPfg"]}}',
    # batch 4 @554: length 0x3c -> 72, crc 0x653b292e, timestamp 0x19c0fca3127; value 01 14 00 00
    "baseOffset: 7 lastOffset: 7 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 554 CreateTime: 1769791435047 size: 72 magic: 2 "
    "compresscodec: none crc: 1698375982 isvalid: true",
    "| offset: 7 CreateTime: 1769791435047 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
    'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',
    # batch 5 @626: length 0x9e -> 170, crc 0x47c6d2d4, timestamp 0x19c0fca3186; BrokerEpoch 8
    "baseOffset: 8 lastOffset: 8 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 626 CreateTime: 1769791435142 size: 170 magic: 2 "
    "compresscodec: none crc: 1204212436 isvalid: true",
    "| offset: 8 CreateTime: 1769791435142 keySize: -1 valueSize: 100 sequence: -1 headerKeys: [] "
    'payload: {"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":1,"isMigratingZkBroker":false,'
    '"incarnationId":"ta5R4VtUQvagltuIzSD9hg","brokerEpoch":8,"endPoints":[{"name":"PLAINTEXT",'
    '"host":"kafka","port":9092,"securityProtocol":0}],"features":[{"name":"metadata.version",'
    '"minSupportedVersion":1,"maxSupportedVersion":19}],"rack":null,"fenced":true,'
    '"inControlledShutdown":false,"logDirs":["XHhkr4tkSsD900pOQ8pPfg"]}}',
    # batch 6 @796: length 0x4b -> 87, crc 0x58238e2f, timestamp 0x19c0fca31bc;
    # value 01 11 00, BrokerId 1, BrokerEpoch 8, tagged fields 01: tag 0 size 1 value ff (Fenced -1)
    "baseOffset: 9 lastOffset: 9 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 796 CreateTime: 1769791435196 size: 87 magic: 2 "
    "compresscodec: none crc: 1478725167 isvalid: true",
    "| offset: 9 CreateTime: 1769791435196 keySize: -1 valueSize: 19 sequence: -1 headerKeys: [] "
    'payload: {"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":8,'
    '"fenced":-1}}',
    # batch 7 @883: length 0x3c -> 72, crc 0x5ba01fa3, timestamp 0x19c0fca3318
    "baseOffset: 10 lastOffset: 10 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 883 CreateTime: 1769791435544 size: 72 magic: 2 "
    "compresscodec: none crc: 1537220515 isvalid: true",
    "| offset: 10 CreateTime: 1769791435544 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
    'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',
]


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["metadata", "dump", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_golden_first_lines_of_a_real_segment(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = samples_dir / LDI_SEGMENT
    code, lines, err = _dump(capsys, str(path))
    assert code == 0, err
    assert lines[0] == f"Dumping {path}"
    for i, expected in enumerate(LDI_GOLDEN, start=1):
        assert lines[i] == expected, f"line {i}"


def test_snapshot_and_bootstrap_files(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = _dump(capsys, str(samples_dir / HW02_SNAPSHOT))
    assert code == 0
    # the file name says end offset 8931, epoch 23; records inside a snapshot start at offset 0
    assert lines[1] == "Snapshot end offset: 8931, epoch: 23"
    assert lines[3] == (
        "| offset: 0 CreateTime: 1739082759307 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1739082759273}'
    )
    assert lines[-1].endswith(
        'keySize: 4 valueSize: 3 sequence: -1 headerKeys: [] SnapshotFooter {"version":0}'
    )
    code, lines, _ = _dump(capsys, str(samples_dir / "otus_kafka_main_b4c7710" / "bootstrap.checkpoint"))
    assert code == 0 and lines[1] == "KRaft bootstrap snapshot"
    assert '"type":"FEATURE_LEVEL_RECORD"' in "\n".join(lines)


def _kafka_enum_name(class_name: str) -> str:
    """MetadataRecordTypeGenerator: MessageGenerator.toSnakeCase(name).toUpperCase()."""
    out = []
    prev_upper = True
    for c in class_name:
        if c.isupper():
            if not prev_upper:
                out.append("_")
            out.append(c.lower())
            prev_upper = True
        else:
            out.append(c)
            prev_upper = False
    return "".join(out).upper()


def _camel_keys(value: object) -> bool:
    if isinstance(value, dict):
        return all(k[:1].islower() and _camel_keys(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_camel_keys(v) for v in value)
    return True


_RECORD_LINE = re.compile(
    r"^\| offset: (\d+) CreateTime: \d+ keySize: (-1|4) valueSize: \d+ sequence: -1 headerKeys: \[\] (.*)$"
)
_CONTROL_END = re.compile(r"^(controlType: LEADER_CHANGE\(2\)|(SnapshotHeader|SnapshotFooter) (\{.*\}))$")


def test_every_record_of_every_sample_prints_kafkas_type_and_valid_json(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted(p for p in samples_dir.rglob("*") if p.suffix in (".log", ".checkpoint"))
    assert len(files) >= 8
    types_seen: set[str] = set()
    for path in files:
        code, lines, err = _dump(capsys, str(path))
        assert code == 0, err
        log_file = classify(path)
        assert log_file is not None
        expected = {e.offset: e for e in iter_entries(log_file)}
        printed: dict[int, str] = {}
        for line in lines[2:]:
            if line.startswith("baseOffset: "):
                continue
            m = _RECORD_LINE.match(line)
            assert m, line
            offset, key_size, rest = int(m.group(1)), m.group(2), m.group(3)
            entry = expected[offset]
            if entry.control:
                assert key_size == "4"
                control = _CONTROL_END.match(rest)
                assert control, rest
                if control.group(3):
                    assert _camel_keys(json.loads(control.group(3)))
                printed[offset] = rest
                continue
            assert key_size == "-1" and rest.startswith("payload: ")
            payload = json.loads(rest.removeprefix("payload: "))
            name = entry.message.message.NAME
            assert list(payload) == ["type", "version", "data"]
            assert payload["type"] == _kafka_enum_name(name) and payload["type"].endswith("_RECORD")
            assert payload["version"] == entry.message.version
            assert _camel_keys(payload["data"])
            types_seen.add(payload["type"])
            printed[offset] = rest
        assert sorted(printed) == sorted(expected), path
    assert {
        "REGISTER_BROKER_RECORD",
        "TOPIC_RECORD",
        "PARTITION_RECORD",
        "CONFIG_RECORD",
        "PARTITION_CHANGE_RECORD",
        "FEATURE_LEVEL_RECORD",
        "PRODUCER_IDS_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD",
        "NO_OP_RECORD",
        "ZK_MIGRATION_STATE_RECORD",
        "BEGIN_TRANSACTION_RECORD",
        "END_TRANSACTION_RECORD",
        "REGISTER_CONTROLLER_RECORD",
    } <= types_seen


def test_kraftpy_and_json_formats_still_work(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = samples_dir / "otus_kafka_HW02_d9e6ebb" / "__cluster_metadata-0" / "00000000000000000000.log"
    code, lines, _ = _dump(capsys, "--format", "kraftpy", "--from-offset", "9073", str(path))
    assert code == 0
    assert lines[0] == f"Dumping {path} (segment)"
    assert "| offset 9073 NoOpRecord v0 {}" in lines
    for args in (["--json"], ["--format", "json"], ["--json", "--format", "json"]):
        code, lines, _ = _dump(capsys, *args, "--from-offset", "9072", str(path))
        assert code == 0
        objs = [json.loads(x) for x in lines]
        assert [o["offset"] for o in objs] == [9072, 9073] and objs[1]["type"] == "NoOpRecord"
    code, lines, err = _dump(capsys, "--json", "--format", "kafka", str(path))
    assert code == 2 and lines == [] and len(err.splitlines()) == 1
    # the Kafka format honours --from-offset too: headers, then only the batches from that offset on
    code, lines, _ = _dump(capsys, "--from-offset", "9073", str(path))
    assert code == 0 and lines[1] == "Log starting offset: 0"
    assert lines[2].startswith("baseOffset: 9073 lastOffset: 9073 ")
    assert lines[3].startswith("| offset: 9073 ") and len(lines) == 4


def test_a_directory_dumps_its_segments_file_by_file(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = _dump(capsys, str(samples_dir / "otus_kafka_main_b4c7710"))
    assert code == 0
    assert lines[0] == f"Dumping {samples_dir / TINY_SEGMENT}" and lines[1] == "Log starting offset: 0"
    assert len(lines) == 9  # 2 headers, 2 batches, 5 records


def test_missing_and_non_log_files_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, err = _dump(capsys, str(tmp_path / "missing.log"))
    assert code == 2 and lines == [] and err.count("\n") == 1 and "no such file" in err
    (tmp_path / "notes.txt").write_text("hi")
    code, lines, err = _dump(capsys, str(tmp_path / "notes.txt"))
    assert code == 2 and lines == [] and err.count("\n") == 1 and "not a segment" in err
    # a text file named like a segment: its "length" field points past the end, as a torn tail does
    text = tmp_path / "00000000000000000000.log"
    text.write_text("this is not a metadata log, just some text\n" * 3)  # 3 * 43 bytes
    code, lines, err = _dump(capsys, str(text))
    assert code == 1 and err.count("\n") == 1 and "not a whole record batch" in err
    assert lines == [
        f"Dumping {text}",
        "Log starting offset: 0",
        f"Found 129 invalid bytes at the end of {text.name}",
    ]
    # zeros (a preallocated tail): a size field below Kafka's minimum
    zeros = tmp_path / "00000000000000000005.log"
    zeros.write_bytes(bytes(64))
    code, lines, err = _dump(capsys, str(zeros))
    assert code == 1 and "smaller than minimum record overhead" in err and err.count("\n") == 1
    assert lines == [f"Dumping {zeros}", "Log starting offset: 5"]


def test_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "kraftpy"
    junk = tmp_path / "00000000000000000000.log"
    junk.write_bytes(b"\x00" * 8 + b"\x00\x00\x00\x40" + b"\x07" * 100)  # a batch of magic 7
    for path in (junk, tmp_path / "nope.log"):
        run = subprocess.run(
            [str(exe), "metadata", "dump", str(path)], capture_output=True, text=True, cwd=REPO
        )
        assert run.returncode != 0
        assert "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1, run.stderr


def test_torn_tail_and_bad_crc_print_as_kafka_and_exit_1(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = (samples_dir / TINY_SEGMENT).read_bytes()
    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes(data[:-10])  # batch 0 is 91 bytes; 135 of batch 1's 145 remain
    code, lines, err = _dump(capsys, str(torn))
    assert code == 1 and len(lines) == 5 and err.count("\n") == 1
    assert lines[-1] == "Found 135 invalid bytes at the end of 00000000000000000000.log"
    flipped = bytearray(data)
    level = data.index(b"metadata.version") + len(b"metadata.version") + 1  # FeatureLevel low byte
    assert flipped[level] == 20
    flipped[level] = 21
    torn.write_bytes(bytes(flipped))
    code, lines, err = _dump(capsys, str(torn))
    assert code == 1 and "CRC-32C" in err and err.count("\n") == 1
    assert lines[4].startswith("baseOffset: 1 ") and lines[4].endswith(" isvalid: false")
    assert '"featureLevel":21' in lines[6]


def test_control_records_unknown_records_and_doubles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    voter_dir = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
    voters = VotersRecord(
        Voters=[
            VotersRecord.Voter(
                VoterId=1,
                VoterDirectoryId=voter_dir,
                Endpoints=[VotersRecord.Endpoint(Name="CONTROLLER", Host="c1", Port=9093)],
                KRaftVersionFeature=VotersRecord.KRaftVersionFeature(
                    MinSupportedVersion=0, MaxSupportedVersion=1
                ),
            )
        ]
    )
    commit = UnknownControlRecord(1, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07")  # COMMIT, epoch 7
    odd = UnknownControlRecord(9, b"\x00\x00\x00\x09", b"\x00\x00")
    unknown = decode_record(bytes.fromhex("01630007"))  # type 99 from some future Kafka
    assert isinstance(unknown.message, UnknownRecord)
    quota = ClientQuotaRecord(
        Entity=[ClientQuotaRecord.EntityData(EntityType="client-id", EntityName="app")],
        Key="consumer_byte_rate",
        Value=2.5e7,
    )
    data = (
        build_control_batch(0, 1, 1000, [SnapshotHeaderRecord(LastContainedLogTimestamp=999)])
        + build_control_batch(1, 1, 1000, [KRaftVersionRecord(KRaftVersion=1), voters, commit, odd])
        + build_metadata_batch(5, 1, 2000, [unknown, ApiMessageAndVersion(quota, 0)])
        + build_metadata_batch(7, 1, 2000, [ApiMessageAndVersion(NoOpRecord(), 0)])
        + build_control_batch(8, 1, 3000, [SnapshotFooterRecord()])
    )
    path = tmp_path / "00000000000000000009-0000000001.checkpoint"
    path.write_bytes(data)
    code, lines, err = _dump(capsys, str(path))
    assert code == 0, err
    ends = [line.split(" headerKeys: [] ", 1)[1] for line in lines if line.startswith("| ")]
    assert ends == [
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":999}',
        'KRaftVersion {"version":0,"kRaftVersion":1}',
        'KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"XHhkr4tkSsD900pOQ8pPfg",'
        '"endpoints":[{"name":"CONTROLLER","host":"c1","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}',
        "endTxnMarker: COMMIT coordinatorEpoch: 7",
        "controlType: UNKNOWN(9)",
        "payload: Error at 5, skipping. "
        "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 99",
        'payload: {"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"client-id",'
        '"entityName":"app"}],"key":"consumer_byte_rate","value":2.5E7,"remove":false}}',
        'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}',
        'SnapshotFooter {"version":0}',
    ]
    assert lines[1] == "Snapshot end offset: 9, epoch: 1"


def test_malformed_record_values_print_kafkas_error_payloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from protocol.record_batch import _kraft_batch

    values = [
        bytes.fromhex("000c00"),  # frame version 0
        bytes.fromhex("020c00"),  # frame version 2
        bytes.fromhex("010c00") + b"\x11metadata.version\x00\x15\x00" + b"\xff",  # a byte too many
        bytes.fromhex("010c00ff"),  # FeatureLevelRecord cut short
        bytes.fromhex("010c09"),  # FeatureLevelRecord v9
    ]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_kraft_batch(0, 1, 1000, 0, [(None, v) for v in values]))
    code, lines, err = _dump(capsys, str(path))
    assert code == 0, err
    payloads = [line.split(" payload: ", 1)[1] for line in lines if line.startswith("| ")]
    assert payloads == [
        "Error at 0, skipping. Could not deserialize metadata record with frame version 0. Note that "
        "upgrades from the preview release of KRaft in 2.8 to newer versions are not supported.",
        "Error at 1, skipping. Could not deserialize metadata record due to unknown frame version 2"
        "(only frame version 1 is supported)",
        "Error at 2, skipping. Found 1 byte(s) of garbage after 12",
        "Error at 3, skipping. Failed to deserialize record with type 12",
        "Error at 4, skipping. Unknown version 9 of record type 12 (FeatureLevelRecord)",
    ]
