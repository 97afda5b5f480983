package sizedspark.fs;

import java.io.IOException;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/** Hadoop's checksummed local filesystem (`file:`) over NioRawLocalFileSystem. */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
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
