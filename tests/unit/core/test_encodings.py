"""Which files tell a rewrite's encodings, and the writer options it then gives."""
from python_adapter.core.encodings import (EVIDENCE_FILES, EVIDENCE_ROWS, evidence_files,
                                           no_dictionary_options)


def test_the_files_holding_the_most_rows_tell_up_to_a_cap():
    files = [(f"f{i:02d}", EVIDENCE_ROWS + i) for i in range(EVIDENCE_FILES + 4)]
    chosen = evidence_files(files)
    assert chosen == [f"f{i:02d}" for i in range(EVIDENCE_FILES + 3, 3, -1)]


def test_files_below_half_a_page_of_rows_tell_nothing():
    assert evidence_files([("a", EVIDENCE_ROWS - 1), ("b", -1)]) == []
    assert evidence_files([("a", EVIDENCE_ROWS - 1), ("b", EVIDENCE_ROWS)]) == ["b"]


def test_options_turn_the_dictionary_off_per_column():
    assert no_dictionary_options(["payload", "id"]) == {
        "parquet.enable.dictionary#id": "false", "parquet.enable.dictionary#payload": "false"}
    assert no_dictionary_options([]) == {}
