package sizedspark.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.classic.SparkSession;

/**
 * File operations of python_adapter.io.fs.HadoopFS, through the Hadoop FileSystem of the
 * Connect session (its Hadoop configuration reaches the table's storage; the client's host
 * need not). Statuses go back as [path, name, is_dir, size, modified_ms].
 */
final class FileOps {
  /** One monitor per lock path: a fenced step (its fence check and the step) and a change
   * of the lock itself (taken, set aside, broken) never interleave in this server, so once
   * a lock changed hands no step of its former holder runs. */
  private static final java.util.concurrent.ConcurrentHashMap<String, Object> MONITORS =
      new java.util.concurrent.ConcurrentHashMap<>();
  private static final Set<String> PER_ITEM =
      new HashSet<>(java.util.Arrays.asList("rename_many", "copy_many", "delete_files"));
  // python_adapter.io.storage: S3A's conditional create, and its replace on an ETag
  static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";
  static final String CONDITIONAL_ETAG = "fs.option.create.conditional.overwrite.etag";
  private final Configuration conf;

  FileOps(SparkSession session) {
    this.conf = session.sessionState().newHadoopConf();
  }

  static Object monitor(String lock) {
    return MONITORS.computeIfAbsent(lock, k -> new Object());
  }

  /** The operation under the monitor of its fence's lock, or of the lock it changes
   * ("guard"); unguarded otherwise. */
  Object run(String name, JsonNode op) throws Exception {
    String lock = op.path("fence").path("lock").asText(op.path("guard").asText(""));
    if (lock.isEmpty() || PER_ITEM.contains(name)) {
      return step(name, op);  // these take the monitor per file
    }
    synchronized (monitor(lock)) {
      return step(name, op);
    }
  }

  private Object step(String name, JsonNode op) throws Exception {
    switch (name) {
      case "qualify": {
        Path p = new Path(op.path("path").asText());
        return p.getFileSystem(conf).makeQualified(p).toString();
      }
      case "exists": {
        Path p = new Path(op.path("path").asText());
        return p.getFileSystem(conf).exists(p);
      }
      case "mkdirs": {
        Path p = new Path(op.path("path").asText());
        checkFence(op);
        return p.getFileSystem(conf).mkdirs(p);
      }
      case "list_dir":
        return listDir(op.path("path").asText());
      case "list_files":
        return listFiles(op.path("path").asText(), op.path("skip_hidden").asBoolean(true));
      case "existing":
        return existing(op.path("paths"));
      case "rename_many":
        return eachPair(op, (fs, src, dst) -> {
          if (!fs.rename(src, dst)) {
            throw new IOException("rename refused: " + src + " -> " + dst);
          }
        });
      case "copy_many":  // a Hadoop rename: on an object store a copy, then its delete
        return eachPair(op, (fs, src, dst) -> {
          if (!fs.rename(src, dst)) {
            throw new IOException("copy refused: " + src + " -> " + dst);
          }
        });
      case "delete_files":
        return eachPair(op, (fs, path, none) -> fs.delete(path, false));
      case "capabilities": {
        Path p = new Path(op.path("path").asText());
        com.fasterxml.jackson.databind.node.ObjectNode out = SizedOps.JSON.createObjectNode();
        out.put("conditional_create", p.getFileSystem(conf).hasPathCapability(p,
            CONDITIONAL_CREATE));
        out.put("hadoop", org.apache.hadoop.util.VersionInfo.getVersion());
        return out;
      }
      case "versioned": {
        Path p = new Path(op.path("path").asText());
        FileSystem fs = p.getFileSystem(conf);
        return !"file".equals(fs.getScheme()) && fs.hasPathCapability(p, CONDITIONAL_ETAG);
      }
      case "read_versioned":
        return readVersioned(new Path(op.path("path").asText()));
      case "replace_if":
        checkFence(op);
        return replaceIf(new Path(op.path("path").asText()),
            Base64.getDecoder().decode(op.path("data").asText()), op.path("version").asText());
      case "delete": {
        Path p = new Path(op.path("path").asText());
        checkFence(op);
        return p.getFileSystem(conf).delete(p, op.path("recursive").asBoolean(true));
      }
      case "read_bytes":
        return Base64.getEncoder().encodeToString(readBytes(op.path("path").asText()));
      case "write_bytes":
        checkFence(op);
        writeBytes(op.path("path").asText(), Base64.getDecoder().decode(op.path("data").asText()),
            op.path("overwrite").asBoolean(false));
        return null;
      case "size": {
        Path p = new Path(op.path("path").asText());
        return p.getFileSystem(conf).getFileStatus(p).getLen();
      }
      case "drop_checksums_below":
        return dropChecksumsBelow(op.path("path").asText());
      case "footers":
        return sizedspark.fs.StagedFiles.scan(conf, op.path("path").asText(),
            op.path("key").isNull() || op.path("key").isMissingNode() ? null
                : op.path("key").asText());
      case "plain_columns":
        return sizedspark.fs.Dictionaries.plainColumns(conf, op.path("files").asText());
      default:
        throw new IllegalArgumentException("unknown file operation: " + name);
    }
  }

  private ArrayNode listDir(String dir) throws IOException {
    Path p = new Path(dir);
    ArrayNode out = SizedOps.array();
    FileStatus[] found;
    try {
      found = p.getFileSystem(conf).listStatus(p);
    } catch (FileNotFoundException e) {
      return out;
    }
    for (FileStatus st : found) {
      out.add(status(st));
    }
    return out;
  }

  private ArrayNode listFiles(String dir, boolean skipHidden) throws IOException {
    ArrayNode out = SizedOps.array();
    List<Path> todo = new ArrayList<>();
    todo.add(new Path(dir));
    while (!todo.isEmpty()) {
      Path p = todo.remove(todo.size() - 1);
      FileStatus[] found;
      try {
        found = p.getFileSystem(conf).listStatus(p);
      } catch (FileNotFoundException e) {
        continue;
      }
      for (FileStatus st : found) {
        if (skipHidden && hidden(st.getPath().getName())) {
          continue;
        }
        if (st.isDirectory()) {
          todo.add(st.getPath());
        } else {
          out.add(status(st));
        }
      }
    }
    return out;
  }

  /** Spark's rule for names a scan ignores (python_adapter.io.fs.hidden). */
  static boolean hidden(String name) {
    return name.startsWith(".") || (name.startsWith("_") && !name.contains("="))
        || name.endsWith("._COPYING_");
  }

  private ArrayNode existing(JsonNode paths) throws IOException {
    ArrayNode out = SizedOps.array();
    java.util.Map<String, Set<String>> listed = new java.util.HashMap<>();
    for (JsonNode node : paths) {
      String path = node.asText();
      String trimmed = path.replaceAll("/+$", "");
      int cut = trimmed.lastIndexOf('/');
      String parent = cut < 0 ? "" : trimmed.substring(0, cut);
      Set<String> names = listed.get(parent);
      if (names == null) {
        names = new HashSet<>();
        for (JsonNode st : listDir(parent)) {
          names.add(st.get(1).asText());
        }
        listed.put(parent, names);
      }
      if (names.contains(trimmed.substring(cut + 1))) {
        out.add(path);
      }
    }
    return out;
  }

  /** A step on one file or pair (rename, copy, delete: `dst` null for a delete). */
  private interface PairStep {
    void run(FileSystem fs, Path src, Path dst) throws IOException;
  }

  /** The step over every pair in order, each under the fence's monitor and after its
   * check (a broken lock stops a dead client's publish between two files), each
   * destination's directory made once. */
  private int eachPair(JsonNode op, PairStep each) throws IOException {
    Set<String> made = new HashSet<>();
    int done = 0;
    FileSystem fs = null;
    String lock = op.path("fence").path("lock").asText(op.path("guard").asText(""));
    Object monitor = lock.isEmpty() ? new Object() : monitor(lock);
    for (JsonNode pair : op.path("pairs")) {
      if (Thread.currentThread().isInterrupted()) {  // its client's session was ended
        throw new java.io.InterruptedIOException("interrupted after " + done + " files");
      }
      Path src = new Path(pair.get(0).asText());
      Path dst = pair.size() > 1 ? new Path(pair.get(1).asText()) : null;
      if (fs == null) {
        fs = src.getFileSystem(conf);
      }
      synchronized (monitor) {
        checkFence(op);
        if (dst != null && made.add(dst.getParent().toString())) {
          fs.mkdirs(dst.getParent());
        }
        each.run(fs, src, dst);
      }
      done++;
    }
    return done;
  }

  /** The file's bytes and ETag, the read bound to the status it starts from (S3A's change
   * detection); null when there is no file; a file replaced meanwhile is read again. */
  private JsonNode readVersioned(Path p) throws IOException {
    FileSystem fs = p.getFileSystem(conf);
    for (int attempt = 0; attempt < 5; attempt++) {
      FileStatus st;
      try {
        st = fs.getFileStatus(p);
      } catch (FileNotFoundException e) {
        return null;
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (InputStream in = fs.openFile(p).withFileStatus(st).build().get()) {
        in.transferTo(out);
      } catch (FileNotFoundException | org.apache.hadoop.fs.PathIOException e) {
        continue;  // replaced or deleted since its status was read
      } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
        throw new IOException(e);
      }
      com.fasterxml.jackson.databind.node.ObjectNode found = SizedOps.JSON.createObjectNode();
      found.put("data", Base64.getEncoder().encodeToString(out.toByteArray()));
      found.put("version", ((org.apache.hadoop.fs.EtagSource) st).getEtag());
      return found;
    }
    throw new IOException(p + " kept changing while it was read");
  }

  /** Replace the file only if its ETag is still `version`; false when it changed or went. */
  private boolean replaceIf(Path p, byte[] data, String version) throws IOException {
    FSDataOutputStream out = (FSDataOutputStream) p.getFileSystem(conf).createFile(p)
        .must(CONDITIONAL_ETAG, version).build();
    try {
      out.write(data);
    } catch (IOException e) {
      out.close();
      throw e;
    }
    try {
      out.close();
    } catch (FileNotFoundException | org.apache.hadoop.fs.PathIOException e) {
      return false;  // S3A's RemoteFileChangedException (412) is a PathIOException
    }
    return true;
  }

  byte[] readBytes(String path) throws IOException {
    Path p = new Path(path);
    try (InputStream in = p.getFileSystem(conf).open(p)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[65536];
      int n;
      while ((n = in.read(buf)) > 0) {
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    }
  }

  /** A whole file; without overwrite an existing file fails it (the lock's create-if-absent).
   * A local file is created with O_EXCL: Hadoop's local filesystem checks and then creates,
   * so two writers could both succeed (HDFS's create is atomic in the namenode). */
  private void writeBytes(String path, byte[] data, boolean overwrite) throws IOException {
    Path p = new Path(path);
    FileSystem fs = p.getFileSystem(conf);
    Path qualified = fs.makeQualified(p);
    if (!overwrite && "file".equals(qualified.toUri().getScheme())) {
      java.nio.file.Path local = Paths.get(qualified.toUri());
      Files.createDirectories(local.getParent());
      try (OutputStream out = Files.newOutputStream(local, StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE)) {
        out.write(data);
      } catch (FileAlreadyExistsException e) {
        throw new org.apache.hadoop.fs.FileAlreadyExistsException(path + " already exists");
      }
      return;
    }
    boolean conditional = !overwrite && fs.hasPathCapability(p, CONDITIONAL_CREATE);
    // an object store's create-if-absent: a conditional PUT, refused at close when it exists
    try (FSDataOutputStream out = conditional
        ? (FSDataOutputStream) fs.createFile(p).must(CONDITIONAL_CREATE, true).build()
        : fs.create(p, overwrite)) {
      out.write(data);
      out.hflush();
    }
  }

  private int dropChecksumsBelow(String dir) throws IOException {
    Path base = new Path(dir);
    FileSystem fs = base.getFileSystem(conf);
    if (!"file".equals(fs.makeQualified(base).toUri().getScheme())) {
      return 0;
    }
    java.nio.file.Path root = Paths.get(fs.makeQualified(base).toUri());
    if (!Files.isDirectory(root)) {
      return 0;
    }
    List<java.nio.file.Path> crcs = new ArrayList<>();
    try (java.util.stream.Stream<java.nio.file.Path> walk = Files.walk(root)) {
      walk.filter(f -> {
        String n = f.getFileName().toString();
        return n.startsWith(".") && n.endsWith(".crc") && Files.isRegularFile(f);
      }).forEach(crcs::add);
    }
    for (java.nio.file.Path crc : crcs) {
      Files.deleteIfExists(crc);
    }
    return crcs.size();
  }

  /** Fails unless the lock named by the operation's fence holds its token. */
  void checkFence(JsonNode op) throws IOException {
    JsonNode fence = op.path("fence");
    if (fence.isMissingNode() || fence.isNull()) {
      return;
    }
    String lock = fence.path("lock").asText();
    String token = fence.path("token").asText();
    String held;
    try {
      held = SizedOps.JSON.readTree(readBytes(lock)).path("token").asText(null);
    } catch (FileNotFoundException e) {
      held = null;
    }
    if (!token.equals(held)) {
      throw new FencedException("the lock " + lock + " is no longer held by " + token
          + " (now: " + held + "): this operation of a writer whose lock was broken stops");
    }
  }

  static ArrayNode status(FileStatus st) {
    ArrayNode row = SizedOps.array();
    row.add(st.getPath().toString());
    row.add(st.getPath().getName());
    row.add(st.isDirectory());
    row.add(st.isDirectory() ? 0 : st.getLen());
    row.add(st.getModificationTime());
    return row;
  }

  static final class FencedException extends IOException {
    FencedException(String message) {
      super(message);
    }
  }
}
