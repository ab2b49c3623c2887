package nteval;

import java.lang.reflect.Method;
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

  /**
   * The {@code field} (the collection docid) of every Lucene doc number, in one call: the table
   * that maps hits to docids. Read from the field's doc values (Anserini writes binary ones to
   * break score ties by docid), else from stored fields; "" for a document without it. One string,
   * the docids joined by newlines: crossing into Python once, not once per document.
   */
  public static String docids(IndexReader reader, String field) throws Exception {
    final String[] out = new String[reader.maxDoc()];
    for (LeafReaderContext leaf : reader.leaves()) {
      final LeafReader r = leaf.reader();
      final SortedDocValues sorted = r.getSortedDocValues(field);
      final BinaryDocValues binary = sorted == null ? r.getBinaryDocValues(field) : null;
      final StoredFields stored = sorted == null && binary == null ? r.storedFields() : null;
      final Set<String> only = Set.of(field);
      for (int i = 0; i < r.maxDoc(); i++) {
        if (sorted != null) {
          out[leaf.docBase + i] = sorted.advanceExact(i) ? sorted.lookupOrd(sorted.ordValue()).utf8ToString() : "";
        } else if (binary != null) {
          out[leaf.docBase + i] = binary.advanceExact(i) ? binary.binaryValue().utf8ToString() : "";
        } else {
          final String id = stored.document(i, only).get(field);
          out[leaf.docBase + i] = id == null ? "" : id;
        }
      }
    }
    return String.join("\n", out);
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
