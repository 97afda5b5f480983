from python_adapter.spark.write.slot_write import staged_file


def test_slot_directory_is_dropped_and_its_number_kept_in_the_name():
    rel = "day=2025-01-01/__sized_slot=7/part-00003-abc.c000.snappy.parquet"
    assert staged_file(rel) == ("day=2025-01-01", "day=2025-01-01/part-00003-abc-s7.c000.snappy.parquet")


def test_two_slots_of_one_task_get_different_names():
    a = staged_file("d=1/__sized_slot=1/part-00000-u.c000.snappy.parquet")[1]
    b = staged_file("d=1/__sized_slot=2/part-00000-u.c000.snappy.parquet")[1]
    assert a != b and a.startswith("d=1/") and b.startswith("d=1/")


def test_unpartitioned_and_slotless_paths():
    assert staged_file("__sized_slot=3/part-1.parquet") == ("", "part-1-s3.parquet")
    assert staged_file("a=1/b=x/part-1.parquet") == ("a=1/b=x", "a=1/b=x/part-1.parquet")
    assert staged_file("part-1.parquet") == ("", "part-1.parquet")
