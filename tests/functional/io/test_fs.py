"""HadoopFS on the session's local filesystem: what the writer lock relies on."""
import threading

from python_adapter.io.fs import HadoopFS


def test_an_exclusive_create_has_one_winner_however_many_race(spark, tmp_path):
    """Writers taking a free lock at the same moment: exactly one create succeeds and the
    file holds its bytes (Hadoop's local create checks, then creates: both could win)."""
    fs = HadoopFS(spark)
    for round_no in range(30):
        path = f"file:{tmp_path}/r{round_no}/lock"
        start, won = threading.Barrier(6), []

        def take(who):
            start.wait()
            try:
                fs.write_bytes(path, f"writer {who}".encode(), overwrite=False)
                won.append(who)
            except Exception:  # the file exists: someone else took it
                pass

        threads = [threading.Thread(target=take, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, (round_no, won)
        assert fs.read_bytes(path) == f"writer {won[0]}".encode()
