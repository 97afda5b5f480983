package sizedspark.fs;

import java.io.IOException;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Hadoop's local filesystem (`file:`) over NioRawLocalFileSystem, writing no `.crc` side
 * files: other engines scanning a table's directory (polars) fail on them, and Parquet
 * carries its own checksums. Existing `.crc` files are still verified.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
    setWriteChecksum(false);
  }

  /**
   * FileSystem's contract, as HDFS keeps it: a rename never replaces an existing file
   * (java.io's rename would). With Hive support, Spark's `file:` is otherwise Hive's
   * ProxyLocalFileSystem, which keeps the contract the same way.
   */
  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    return isFile(dst) ? false : super.rename(src, dst);
  }
}
