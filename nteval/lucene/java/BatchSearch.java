package nteval;

import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import java.util.Set;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.StoredFieldVisitor;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermVectors;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.FieldDoc;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.util.BytesRef;

/**
 * Many bag-of-words queries searched on Java threads, in one call from Python.
 *
 * <p>pyjnius is not thread-safe, so Python can only call Lucene from one thread; this class runs
 * the searches (query building included) on {@code threads} Java threads and hands back flat
 * arrays of Lucene doc numbers and scores, which Python maps to collection docids with a table.
 * The query generator is called by reflection (Anserini's classes are Java 21 class files; this
 * one is compiled with {@code --release 17} against Lucene's API only).
 *
 * <p>Feedback systems (RM3, Rocchio) run Anserini's own reranker cascade here too, on a searcher
 * that loads no stored documents (see {@link #feedbackSearch}).
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

  /** Every query's hits: query {@code i} owns slots {@code i*k .. i*k+counts[i]) of the flat arrays. */
  private static final class Hits {
    final int[] docs;
    final float[] scores;
    final int[] counts;

    Hits(int n, int k) {
      final int slots = Math.multiplyExact(n, k);  // callers batch their queries well below 2^31 slots
      docs = new int[slots];
      scores = new float[slots];
      counts = new int[n];
    }
  }

  /**
   * Every query's hits as one little-endian {@code byte[]}: the {@code n} counts (int32), then every
   * query's Lucene doc numbers (int32), then their scores (float32), queries in order, only the
   * slots that hold hits. pyjnius hands a {@code byte[]} to Python as bytes at memcpy speed, where an
   * {@code int[]} or {@code float[]} becomes a Python list (≈ 0.25 s per million hits each): Python
   * reads this with numpy.
   */
  static byte[] packed(Hits h, int k) {
    final int n = h.counts.length;
    int total = 0;
    for (int c : h.counts) {
      total += c;
    }
    final ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(4, n + 2 * total)).order(ByteOrder.LITTLE_ENDIAN);
    final IntBuffer ints = b.asIntBuffer();
    ints.put(h.counts);
    for (int i = 0; i < n; i++) {
      ints.put(h.docs, i * k, h.counts[i]);
    }
    final FloatBuffer floats = b.asFloatBuffer();
    floats.position(n + total);
    for (int i = 0; i < n; i++) {
      floats.put(h.scores, i * k, h.counts[i]);
    }
    return b.array();
  }

  /** Anserini's query generator's {@code buildQuery(field, analyzer, text)}. */
  private static Method buildQuery(Object generator) throws NoSuchMethodException {
    return generator.getClass().getMethod("buildQuery", String.class, Analyzer.class, String.class);
  }

  /** The work on query {@code i}. */
  interface QueryTask {
    void run(int i) throws Exception;
  }

  /**
   * Runs {@code task} for queries 0..n-1 on {@code threads} threads. The first failure stops every
   * thread at its next query and is rethrown as itself (not wrapped in the executor's or
   * reflection's exceptions), so Python's error names the real cause.
   */
  static void forEachQuery(int n, int threads, QueryTask task) throws Exception {
    final AtomicInteger next = new AtomicInteger();
    final AtomicBoolean failed = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, threads));
    try {
      List<Future<?>> tasks = new ArrayList<>();
      for (int t = 0; t < Math.max(1, threads); t++) {
        tasks.add(pool.submit(() -> {
          int i;
          try {
            while (!failed.get() && (i = next.getAndIncrement()) < n) {
              task.run(i);
            }
          } catch (Exception | Error e) {
            failed.set(true);
            throw e;
          }
          return null;
        }));
      }
      for (Future<?> f : tasks) {
        f.get();
      }
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      while (cause instanceof InvocationTargetException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      throw cause instanceof Exception ? (Exception) cause : e;
    } finally {
      pool.shutdownNow();
    }
  }

  /** A hit's score: its own, or the first value of its sort (the relevance, for a sort that starts with it). */
  static float scoreOf(ScoreDoc hit) {
    if (!Float.isNaN(hit.score)) {
      return hit.score;
    }
    return (Float) ((FieldDoc) hit).fields[0];
  }

  /**
   * Every query's hits, {@link #packed}, each in the order {@code sort} gives (score, then docid;
   * {@code sort} must start with the relevance score).
   */
  public static byte[] search(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                              String[] texts, int k, Sort sort, int threads) throws Exception {
    final Method build = buildQuery(generator);
    final Hits out = new Hits(texts.length, k);
    forEachQuery(texts.length, threads, i -> {
      Query q = (Query) build.invoke(generator, field, analyzer, texts[i]);
      if (q == null) {
        return;
      }
      // doDocScores false: the score is the sort's first value already (SortField.FIELD_SCORE);
      // asking Lucene for scores would score every hit a second time (populateScores)
      ScoreDoc[] hits = searcher.search(q, k, sort, false).scoreDocs;
      out.counts[i] = hits.length;
      for (int j = 0; j < hits.length; j++) {
        out.docs[i * k + j] = hits[j].doc;
        out.scores[i * k + j] = scoreOf(hits[j]);
      }
    });
    return packed(out, k);
  }

  /**
   * One Lucene query's hits, {@link #packed} (a query nteval built itself: the disjunctive and
   * conjunctive kinds), in the order {@code sort} gives: one call from Python instead of one per hit.
   */
  public static byte[] searchQuery(IndexSearcher searcher, Query query, int k, Sort sort) throws Exception {
    final ScoreDoc[] hits = searcher.search(query, k, sort, false).scoreDocs;
    final Hits out = new Hits(1, k);
    out.counts[0] = hits.length;
    for (int j = 0; j < hits.length; j++) {
      out.docs[j] = hits[j].doc;
      out.scores[j] = scoreOf(hits[j]);
    }
    return packed(out, k);
  }

  /**
   * A batch searching on its own threads while Python turns the previous batch's hits into
   * rankings ({@link #startSearch}, {@link #startFeedbackSearch}): Java's threads need no GIL, so
   * the two overlap. {@link #get} waits for it (its failure rethrown as itself); {@link #cancel}
   * stops it (Python gave up on the call).
   */
  public static final class Pending {
    private final Future<byte[]> future;
    private final ExecutorService runner;

    Pending(Callable<byte[]> work) {
      runner = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "nteval-batch");
        t.setDaemon(true);
        return t;
      });
      future = runner.submit(work);
    }

    public byte[] get() throws Exception {
      try {
        return future.get();
      } catch (ExecutionException e) {
        final Throwable cause = e.getCause();
        if (cause instanceof Error) {
          throw (Error) cause;
        }
        throw cause instanceof Exception ? (Exception) cause : e;
      } finally {
        runner.shutdown();
      }
    }

    public void cancel() {
      future.cancel(true);
      runner.shutdownNow();
    }
  }

  /** {@link #search}, started on its own threads: its hits come from {@link Pending#get}. */
  public static Pending startSearch(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                                    String[] texts, int k, Sort sort, int threads) {
    return new Pending(() -> search(searcher, generator, analyzer, field, texts, k, sort, threads));
  }

  /** {@link #feedbackSearch}, started on its own threads: its hits come from {@link Pending#get}. */
  public static Pending startFeedbackSearch(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                                            String[] texts, int k, Sort sort, Object cascade, boolean cutoff,
                                            int threads) {
    return new Pending(() -> feedbackSearch(searcher, generator, analyzer, field, texts, k, sort, cascade, cutoff,
        threads));
  }

  /**
   * An {@link IndexSearcher} whose stored fields read nothing. Anserini's rerankers turn every hit
   * list into {@code ScoredDocs.fromTopDocs(hits, searcher)}, which loads each hit's stored document
   * (the raw JSON) through {@code searcher.storedFields()} only to read its id: for 1,000 hits that is
   * megabytes per query, and it kept the whole stored-fields file mapped. Feedback itself reads term
   * vectors (or, without them, stored text) from the index reader, not from here, so its terms and
   * scores are unchanged; docids come from nteval's docid table instead.
   */
  private static final class NoStoredFieldsSearcher extends IndexSearcher {
    NoStoredFieldsSearcher(IndexReader reader) {
      super(reader);
    }

    @Override
    public StoredFields storedFields() {
      return new StoredFields() {
        @Override
        public void document(int docID, StoredFieldVisitor visitor) {}
      };
    }
  }

  /** A searcher for {@link #feedbackSearch}: set its similarity as for any other searcher. */
  public static IndexSearcher feedbackSearcher(IndexReader reader) {
    return new NoStoredFieldsSearcher(reader);
  }

  /**
   * One call's feedback search: Anserini's classes, looked up by name (they are Java 21 class files;
   * see the class comment), and what every query of the call shares.
   */
  private static final class Feedback {
    final Method fromTopDocs;
    final Method analyze;
    final Constructor<?> context;
    final Method run;
    final Field luceneDocids;
    final Field scores;
    final Field feedbackTerms;
    final Object args;
    final IndexSearcher searcher;
    final Object generator;
    final Method build;
    final Analyzer analyzer;
    final String field;
    final Sort sort;
    final Object cascade;
    final int first;

    /**
     * SimpleSearcher's settings: default arguments, {@code hits} = k, score ties broken by docid; a
     * first stage of {@code rerankcutoff} hits when {@code cutoff} (RM3), else {@code k}.
     */
    Feedback(IndexSearcher searcher, Object generator, Analyzer analyzer, String field, int k, Sort sort, Object cascade,
             boolean cutoff) throws Exception {
      final Class<?> scoredDocs = Class.forName("io.anserini.search.ScoredDocs");
      final Class<?> argsClass = Class.forName("io.anserini.search.SearchCollection$Args");
      final Class<?> contextClass = Class.forName("io.anserini.rerank.RerankerContext");
      fromTopDocs = scoredDocs.getMethod("fromTopDocs", TopDocs.class, IndexSearcher.class);
      analyze = Class.forName("io.anserini.analysis.AnalyzerUtils").getMethod("analyze", Analyzer.class, String.class);
      context = contextClass.getConstructor(IndexSearcher.class, Object.class, Query.class, String.class, String.class,
          List.class, Query.class, argsClass);
      run = cascade.getClass().getMethod("run", scoredDocs, contextClass);
      luceneDocids = scoredDocs.getField("lucene_docids");
      scores = scoredDocs.getField("scores");
      feedbackTerms = contextClass.getField("feedbackTerms");
      args = argsClass.getConstructor().newInstance();
      argsClass.getField("hits").setInt(args, k);
      argsClass.getField("arbitraryScoreTieBreak").setBoolean(args, false);
      this.searcher = searcher;
      this.generator = generator;
      this.build = buildQuery(generator);
      this.analyzer = analyzer;
      this.field = field;
      this.sort = sort;
      this.cascade = cascade;
      this.first = cutoff ? argsClass.getField("rerankcutoff").getInt(args) : k;
    }

    /**
     * One query through the cascade, as {@code SimpleSearcher} runs it: {@code {reranked ScoredDocs,
     * reranker context}}, or null when the query analyzes to nothing.
     */
    Object[] rerank(String text) throws Exception {
      final Query q = (Query) build.invoke(generator, field, analyzer, text);
      if (q == null) {
        return null;
      }
      final TopDocs hits = searcher.search(q, first, sort, true);
      final Object ctx = context.newInstance(searcher, null, q, null, text, analyze.invoke(null, analyzer, text), null,
          args);
      return new Object[] {run.invoke(cascade, fromTopDocs.invoke(null, hits, searcher), ctx), ctx};
    }
  }

  /**
   * Feedback search (RM3, Rocchio) of many queries on {@code threads} Java threads, through
   * Anserini's reranker {@code cascade} as {@code SimpleSearcher.batch_search} runs it on a Lucene
   * 9+ index (see {@link Feedback}; on a Lucene 8 index SimpleSearcher would break score ties
   * arbitrarily, and nteval builds none), but on a {@link #feedbackSearcher}: no stored document is
   * loaded. Same return value as {@link #search}.
   */
  public static byte[] feedbackSearch(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                                        String[] texts, int k, Sort sort, Object cascade, boolean cutoff, int threads)
      throws Exception {
    final Feedback fb = new Feedback(searcher, generator, analyzer, field, k, sort, cascade, cutoff);
    final Hits out = new Hits(texts.length, k);
    forEachQuery(texts.length, threads, i -> {
      final Object[] done = fb.rerank(texts[i]);
      if (done == null) {
        return;
      }
      final int[] ids = (int[]) fb.luceneDocids.get(done[0]);
      final float[] s = (float[]) fb.scores.get(done[0]);
      final int m = Math.min(ids.length, k);
      out.counts[i] = m;
      System.arraycopy(ids, 0, out.docs, i * k, m);
      System.arraycopy(s, 0, out.scores, i * k, m);
    });
    return packed(out, k);
  }

  /** The expansion terms and weights the cascade used for one query (empty when it analyzes to nothing). */
  @SuppressWarnings("unchecked")
  public static Map<String, Float> feedbackTerms(IndexSearcher searcher, Object generator, Analyzer analyzer,
                                                 String field, String text, int k, Sort sort, Object cascade,
                                                 boolean cutoff) throws Exception {
    final Feedback fb = new Feedback(searcher, generator, analyzer, field, k, sort, cascade, cutoff);
    final Object[][] done = new Object[1][];
    forEachQuery(1, 1, i -> done[0] = fb.rerank(text));  // (its failures unwrapped as for a batch)
    final Object terms = done[0] == null ? null : fb.feedbackTerms.get(done[0][1]);
    return terms == null ? Map.of() : (Map<String, Float>) terms;
  }

  /**
   * The positions of each of {@code terms} (already analyzed) in each document's stored term vector
   * of {@code field}, the documents named by their {@code idField} value: one call for a topic's
   * reranked documents instead of one per document, each returning a map of every term. Little-endian
   * ints: for each document, for each term, its count, then that many positions (ascending, as the
   * vector stores them); a document that is not in the index, or has no vector, counts 0 for every term.
   */
  public static byte[] termPositions(IndexReader reader, String idField, String field, String[] docids,
                                     String[] terms) throws Exception {
    final IndexSearcher byId = new IndexSearcher(reader);
    final TermVectors vectors = reader.termVectors();
    final BytesRef[] wanted = new BytesRef[terms.length];
    for (int t = 0; t < terms.length; t++) {
      wanted[t] = new BytesRef(terms[t]);
    }
    final List<int[]> found = new ArrayList<>();
    int size = 0;
    PostingsEnum postings = null;
    for (String docid : docids) {
      final TopDocs hit = byId.search(new TermQuery(new Term(idField, docid)), 1);
      final Terms vector = hit.scoreDocs.length == 0 ? null : vectors.get(hit.scoreDocs[0].doc, field);
      final TermsEnum te = vector == null ? null : vector.iterator();
      for (BytesRef term : wanted) {
        int[] positions = new int[0];
        if (te != null && te.seekExact(term)) {
          postings = te.postings(postings, PostingsEnum.POSITIONS);
          postings.nextDoc();
          positions = new int[postings.freq()];
          for (int i = 0; i < positions.length; i++) {
            positions[i] = postings.nextPosition();
          }
        }
        found.add(positions);
        size += 1 + positions.length;
      }
    }
    final ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(4, size)).order(ByteOrder.LITTLE_ENDIAN);
    final IntBuffer ints = b.asIntBuffer();
    for (int[] positions : found) {
      ints.put(positions.length);
      ints.put(positions);
    }
    return b.array();
  }
}

