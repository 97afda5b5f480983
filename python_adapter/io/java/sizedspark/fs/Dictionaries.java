package sizedspark.fs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;

/**
 * Which top-level columns of some Parquet files hold no dictionary page in any of their row
 * groups (python_adapter/spark/write/encodings.py): one call from Python, the footers read
 * in parallel. The answer is the column names, each written as Fields writes them.
 */
public final class Dictionaries {
  private Dictionaries() {}

  public static String plainColumns(Configuration conf, String files) throws IOException {
    List<Map<String, Boolean>> each;
    try {
      each = Fields.parse(files).parallelStream()
          .map(uri -> dictionaryPages(conf, uri))
          .collect(Collectors.toList());
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    Map<String, Boolean> any = new TreeMap<>();
    for (Map<String, Boolean> file : each) {
      file.forEach((column, has) -> any.merge(column, has, Boolean::logicalOr));
    }
    StringBuilder out = new StringBuilder();
    any.forEach((column, has) -> {
      if (!has) {
        Fields.add(out, column);
      }
    });
    return out.toString();
  }

  /** {column: whether a row group's chunk of it has a dictionary page} of one file. */
  private static Map<String, Boolean> dictionaryPages(Configuration conf, String uri) {
    Map<String, Boolean> out = new TreeMap<>();
    try {
      Path path = new Path(uri);
      ParquetMetadata md = ParquetFileReader.readFooter(
          HadoopInputFile.fromPath(path, conf), ParquetMetadataConverter.NO_FILTER);
      for (BlockMetaData block : md.getBlocks()) {
        for (ColumnChunkMetaData chunk : block.getColumns()) {
          String[] names = chunk.getPath().toArray();
          if (names.length == 1) {  // nested fields keep parquet-mr's default
            out.merge(names[0], chunk.hasDictionaryPage(), Boolean::logicalOr);
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}
