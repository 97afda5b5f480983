package sizedspark.fs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.Type;

/**
 * The Parquet files a write staged, with their rows and key range, from their footers: one
 * call from Python, no Spark job (python_adapter/footers.py).
 *
 * Per file, five fields, each written as "<length in code points>:<text>": the path URI,
 * bytes, rows, and the min and max of the key column encoded as python_adapter.upsert's
 * encode_key does ("n:123", "s:text", "s:2025-01-01"); both empty when the footers do not
 * tell (no key column, a type not encoded here, a row group without statistics).
 */
public final class StagedFiles {
  private static final long FIRST_UNREBASED_DAY = LocalDate.of(1583, 1, 1).toEpochDay();

  private StagedFiles() {}

  /** Footers are read in parallel (an adopted table has thousands of small files, each
   *  read costs an open and a seek), and written out in the listing's order. */
  public static String scan(Configuration conf, String dir, String keyColumn) throws IOException {
    List<FileStatus> files = new ArrayList<>();
    for (FileStatus st : VisibleFiles.walk(conf, dir)) {
      if (st.getPath().getName().endsWith(".parquet")) {
        files.add(st);
      }
    }
    try {
      return files.parallelStream()
          .map(st -> describe(conf, st, keyColumn))
          .collect(Collectors.joining());
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  private static String describe(Configuration conf, FileStatus st, String keyColumn) {
    StringBuilder out = new StringBuilder();
    try {
      describe(out, conf, st, keyColumn);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  private static void describe(StringBuilder out, Configuration conf, FileStatus st,
                               String keyColumn) throws IOException {
    ParquetMetadata md = ParquetFileReader.readFooter(
        HadoopInputFile.fromStatus(st, conf), ParquetMetadataConverter.NO_FILTER);
    long rows = 0;
    for (BlockMetaData block : md.getBlocks()) {
      rows += block.getRowCount();
    }
    String[] range = keyColumn == null ? new String[] {"", ""} : keyRange(md, keyColumn);
    Fields.add(out, st.getPath().toString());
    Fields.add(out, Long.toString(st.getLen()));
    Fields.add(out, Long.toString(rows));
    Fields.add(out, range[0]);
    Fields.add(out, range[1]);
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  static String[] keyRange(ParquetMetadata md, String keyColumn) {
    String[] unknown = {"", ""};
    MessageType schema = md.getFileMetaData().getSchema();
    Type field = null;
    for (Type t : schema.getFields()) {  // Spark matches column names case-insensitively
      if (t.getName().equals(keyColumn) || (field == null && t.getName().equalsIgnoreCase(keyColumn))) {
        field = t;
      }
    }
    if (field == null || !field.isPrimitive()) {
      return unknown;
    }
    PrimitiveType type = field.asPrimitiveType();
    Comparable min = null;
    Comparable max = null;
    Statistics first = null;
    for (BlockMetaData block : md.getBlocks()) {
      if (block.getRowCount() == 0) {
        continue;
      }
      ColumnChunkMetaData chunk = chunkOf(block.getColumns(), field.getName());
      Statistics stats = chunk == null ? null : chunk.getStatistics();
      if (stats == null || stats.isEmpty() || !stats.hasNonNullValue()) {
        return unknown;  // a row group whose range is not known: the file's is not either
      }
      if (first == null) {
        first = stats;
        min = stats.genericGetMin();
        max = stats.genericGetMax();
      } else {
        if (first.comparator().compare(stats.genericGetMin(), min) < 0) {
          min = stats.genericGetMin();
        }
        if (first.comparator().compare(stats.genericGetMax(), max) > 0) {
          max = stats.genericGetMax();
        }
      }
    }
    if (first == null) {
      return unknown;
    }
    String lo = encode(type, min);
    String hi = encode(type, max);
    return lo.isEmpty() || hi.isEmpty() ? unknown : new String[] {lo, hi};
  }

  private static ColumnChunkMetaData chunkOf(List<ColumnChunkMetaData> chunks, String name) {
    for (ColumnChunkMetaData chunk : chunks) {
      String[] path = chunk.getPath().toArray();
      if (path.length == 1 && path[0].equals(name)) {
        return chunk;
      }
    }
    return null;
  }

  /** encode_key's text for the types whose Parquet order is Spark's; "" for the others. */
  static String encode(PrimitiveType type, Object value) {
    LogicalTypeAnnotation logical = type.getLogicalTypeAnnotation();
    switch (type.getPrimitiveTypeName()) {
      case INT32:
      case INT64:
        long v = ((Number) value).longValue();
        if (logical == null || (logical instanceof LogicalTypeAnnotation.IntLogicalTypeAnnotation
            && ((LogicalTypeAnnotation.IntLogicalTypeAnnotation) logical).isSigned())) {
          return "n:" + v;
        }
        // Dates before 1583 may be stored rebased to the Julian calendar (Spark's LEGACY
        // rebase mode): their stored days are not the dates Spark reads back.
        if (logical instanceof LogicalTypeAnnotation.DateLogicalTypeAnnotation
            && v >= FIRST_UNREBASED_DAY) {
          return "s:" + LocalDate.ofEpochDay(v);
        }
        return "";
      case BINARY:
        if (logical instanceof LogicalTypeAnnotation.StringLogicalTypeAnnotation) {
          return "s:" + ((Binary) value).toStringUsingUTF8();
        }
        return "";
      default:
        return "";
    }
  }
}
