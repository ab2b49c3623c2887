package nteval;

import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import java.util.Set;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.Sort;
import org.apache.lucene.util.BytesRef;

/**
 * Many bag-of-words queries searched on Java threads, in one call from Python.
 *
 * <p>pyjnius is not thread-safe, so Python can only call Lucene from one thread; this class runs
 * the searches (query building included) on {@code threads} Java threads and hands back flat
 * arrays of Lucene doc numbers and scores, which Python maps to collection docids with a table.
 * The query generator is called by reflection (Anserini's classes are Java 21 class files; this
 * one is compiled with {@code --release 17} against Lucene's API only).
 */
public final class BatchSearch {
  private BatchSearch() {}

  /** Receives one document's id as UTF-8 bytes (length 0 when it has none). */
  private interface IdSink {
    void accept(byte[] bytes, int offset, int length) throws Exception;
  }

  /** Every Lucene doc number's {@code field}, in doc-number order, without building a String per document. */
  private static void eachId(IndexReader reader, String field, IdSink sink) throws Exception {
    final byte[] none = new byte[0];
    for (LeafReaderContext leaf : reader.leaves()) {
      final LeafReader r = leaf.reader();
      final SortedDocValues sorted = r.getSortedDocValues(field);
      final BinaryDocValues binary = sorted == null ? r.getBinaryDocValues(field) : null;
      final StoredFields stored = sorted == null && binary == null ? r.storedFields() : null;
      final Set<String> only = Set.of(field);
      for (int i = 0; i < r.maxDoc(); i++) {
        BytesRef b = null;
        if (sorted != null) {
          b = sorted.advanceExact(i) ? sorted.lookupOrd(sorted.ordValue()) : null;
        } else if (binary != null) {
          b = binary.advanceExact(i) ? binary.binaryValue() : null;
        } else {
          final String id = stored.document(i, only).get(field);
          b = id == null ? null : new BytesRef(id);
        }
        if (b == null) {
          sink.accept(none, 0, 0);
        } else {
          sink.accept(b.bytes, b.offset, b.length);
        }
      }
    }
  }

  /** A canonical decimal below 10^18 (no sign, no leading zero): stored as an int64. */
  private static boolean canonicalDecimal(byte[] b, int off, int len) {
    if (len == 0 || len > 18 || (len > 1 && b[off] == '0')) {
      return false;
    }
    for (int i = off; i < off + len; i++) {
      if (b[i] < '0' || b[i] > '9') {
        return false;
      }
    }
    return true;
  }

  /**
   * Writes the docid table to a NumPy {@code .npy} file at {@code path}, streaming (no array of every
   * docid in the heap): {@code <i8} when every docid is a canonical decimal (PMIDs; -1 for a
   * document without one), else {@code |S<width>} (UTF-8, NUL-padded). Returns the dtype. Python
   * memory-maps the file, so every process on a machine shares one copy in the page cache.
   */
  public static String writeDocids(IndexReader reader, String field, String path) throws Exception {
    final boolean[] numeric = {true};
    final int[] width = {1};
    eachId(reader, field, (b, off, len) -> {
      width[0] = Math.max(width[0], len);
      if (numeric[0] && len > 0 && !canonicalDecimal(b, off, len)) {
        numeric[0] = false;
      }
    });
    final String descr = numeric[0] ? "<i8" : "|S" + width[0];
    final StringBuilder header = new StringBuilder("{'descr': '" + descr + "', 'fortran_order': False, 'shape': ("
        + reader.maxDoc() + ",), }");
    while ((10 + header.length() + 1) % 64 != 0) {
      header.append(' ');
    }
    header.append('\n');
    try (OutputStream out = new BufferedOutputStream(new FileOutputStream(path), 1 << 20)) {
      out.write(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0});
      out.write(header.length() & 0xff);
      out.write((header.length() >> 8) & 0xff);
      out.write(header.toString().getBytes(StandardCharsets.US_ASCII));
      final byte[] eight = new byte[8];
      final byte[] pad = new byte[width[0]];
      eachId(reader, field, (b, off, len) -> {
        if (numeric[0]) {
          long v = -1;
          if (len > 0) {
            v = 0;
            for (int i = off; i < off + len; i++) {
              v = v * 10 + (b[i] - '0');
            }
          }
          for (int i = 0; i < 8; i++) {
            eight[i] = (byte) (v >>> (8 * i));
          }
          out.write(eight);
        } else {
          out.write(b, off, len);
          out.write(pad, 0, width[0] - len);
        }
      });
    }
    return descr;
  }

  /**
   * Returns {@code {int[] docs, float[] scores, int[] counts}}: query {@code i}'s hits are
   * {@code docs[i*k .. i*k+counts[i])}, in the order {@code sort} gives (score, then docid).
   */
  public static Object[] search(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                                String[] texts, int k, Sort sort, int threads) throws Exception {
    final Method build = generator.getClass().getMethod("buildQuery", String.class, Analyzer.class, String.class);
    final int n = texts.length;
    final int[] docs = new int[n * k];
    final float[] scores = new float[n * k];
    final int[] counts = new int[n];
    final AtomicInteger next = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, threads));
    try {
      List<Future<?>> tasks = new ArrayList<>();
      for (int t = 0; t < Math.max(1, threads); t++) {
        tasks.add(pool.submit(() -> {
          int i;
          while ((i = next.getAndIncrement()) < n) {
            Query q = (Query) build.invoke(generator, field, analyzer, texts[i]);
            if (q == null) {
              continue;
            }
            ScoreDoc[] hits = searcher.search(q, k, sort, true).scoreDocs;
            counts[i] = hits.length;
            for (int j = 0; j < hits.length; j++) {
              docs[i * k + j] = hits[j].doc;
              scores[i * k + j] = hits[j].score;
            }
          }
          return null;
        }));
      }
      for (Future<?> f : tasks) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    return new Object[] {docs, scores, counts};
  }
}
