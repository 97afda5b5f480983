package sizedspark.fs;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The files below a directory that a Spark table scan sees, in one call from Python
 * (python_adapter.fs.HadoopFS.list_files): hidden names are skipped without being entered,
 * so a table's timeline directory costs nothing.
 */
public final class VisibleFiles {
  private VisibleFiles() {}

  /** Per file "<n>:<path URI><n>:<bytes><n>:<modification ms>" (n: length in code points). */
  public static String list(Configuration conf, String dir) throws IOException {
    StringBuilder out = new StringBuilder();
    for (FileStatus st : walk(conf, dir)) {
      Fields.add(out, st.getPath().toString());
      Fields.add(out, Long.toString(st.getLen()));
      Fields.add(out, Long.toString(st.getModificationTime()));
    }
    return out.toString();
  }

  static List<FileStatus> walk(Configuration conf, String dir) throws IOException {
    Path base = new Path(dir);
    FileSystem fs = base.getFileSystem(conf);
    List<FileStatus> files = new ArrayList<>();
    Deque<Path> todo = new ArrayDeque<>();
    todo.add(base);
    while (!todo.isEmpty()) {
      FileStatus[] listed;
      try {
        listed = fs.listStatus(todo.pop());
      } catch (FileNotFoundException e) {
        continue;
      }
      for (FileStatus st : listed) {
        if (hidden(st.getPath().getName())) {
          continue;
        }
        if (st.isDirectory()) {
          todo.add(st.getPath());
        } else {
          files.add(st);
        }
      }
    }
    return files;
  }

  /** Spark's rule, as python_adapter.fs.hidden. */
  static boolean hidden(String name) {
    return name.startsWith(".") || (name.startsWith("_") && !name.contains("="))
        || name.endsWith("._COPYING_");
  }
}
