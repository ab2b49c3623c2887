package nteval;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermStates;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TermStatistics;
import org.apache.lucene.search.similarities.Similarity;
import org.apache.lucene.util.Bits;

/**
 * Every cell of a grid over one similarity's parameters from one pass over the postings.
 *
 * <p>The cells of a BM25 k1 × b grid (or a QLD μ axis: any similarity whose score is a sum over
 * the query's terms of a per-posting score) differ only in a few floats of the scoring function;
 * the postings a query reads are the same for every cell. For each query this routine reads each
 * matching posting once (document at a time, over every segment: each matching document gets a
 * slot, each term its list of (slot, freq)), then scores every cell in turn, term at a time, with
 * that cell's {@link Similarity}: exhaustive evaluation, no dynamic pruning, so nothing differs per
 * cell but the scores. Each cell's {@code k} best are selected, not heaped: neighbouring cells rank
 * alike, so the previous cell's {@code k} best, scored under this cell, bound its {@code k}-th best
 * from below, and only the documents at or above that bound are packed ({@link #pack}) and
 * selected among (a quickselect).
 *
 * <p>Results equal the per-cell Lucene runs of {@link BatchSearch#search}: the query is Anserini's
 * bag of words (one SHOULD clause per distinct analyzed term, boosted by its count), each term's
 * score is computed by the cell's own {@code Similarity.SimScorer} from the same collection and
 * term statistics Lucene's {@code TermWeight} uses (so the float is Lucene's, bit for bit), the
 * clauses' scores are summed in double and cast to float as Lucene's disjunction scorers do, and
 * ties are broken by the docid (ascending), as {@code BREAK_SCORE_TIES_BY_DOCID} does — the caller
 * passes each Lucene doc number's rank in docid order.
 */
public final class GridSearch {
  private GridSearch() {}

  /** One query's clauses: terms in the order of the generator's BooleanQuery, and their boosts. */
  private static final class Clauses {
    final List<Term> terms = new ArrayList<>();
    final List<Float> boosts = new ArrayList<>();
  }

  private static Clauses clauses(Query q) {
    Clauses out = new Clauses();
    if (q == null) {
      return out;
    }
    List<Query> parts = new ArrayList<>();
    if (q instanceof BooleanQuery) {
      for (BooleanClause c : ((BooleanQuery) q).clauses()) {
        if (c.getOccur() != BooleanClause.Occur.SHOULD) {
          throw new IllegalArgumentException("one-pass grids score bag-of-words queries only (SHOULD clauses)");
        }
        parts.add(c.getQuery());
      }
    } else {
      parts.add(q);
    }
    for (Query p : parts) {
      float boost = 1f;
      while (p instanceof BoostQuery) {
        boost *= ((BoostQuery) p).getBoost();
        p = ((BoostQuery) p).getQuery();
      }
      if (!(p instanceof TermQuery)) {
        throw new IllegalArgumentException("one-pass grids score term queries only, got " + p.getClass().getName());
      }
      out.terms.add(((TermQuery) p).getTerm());
      out.boosts.add(boost);
    }
    return out;
  }

  /**
   * A hit packed into one long whose natural order is the ranking's: the score's order-preserving
   * bits high, the docid rank inverted low, so a greater long is a better hit (higher score, or the
   * same score and an earlier docid). {@code + 0f} makes -0 the same as +0, as float comparison does.
   */
  public static long pack(float score, int rank) {
    int bits = Float.floatToIntBits(score + 0f);
    bits ^= (bits >> 31) & 0x7fffffff;
    return ((long) bits << 32) | (long) (Integer.MAX_VALUE - rank);
  }

  public static float score(long packed) {
    int bits = (int) (packed >> 32);
    bits ^= (bits >> 31) & 0x7fffffff;
    return Float.intBitsToFloat(bits);
  }

  public static int rank(long packed) {
    return Integer.MAX_VALUE - (int) (packed & 0xffffffffL);
  }

  /**
   * The {@code k} greatest of {@code a[0 .. n)} (distinct values), in no order, into
   * {@code a[0 .. min(k, n))}; returns how many. A quickselect moves them to the end (expected
   * linear time; a median-of-three pivot, and a sort should the partitions degenerate).
   */
  static int best(long[] a, int n, int k) {
    if (n > k) {
      int lo = 0;
      int hi = n - 1;
      final int target = n - k;  // a[target] is the k-th greatest once selected
      int budget = 2 * (64 - Long.numberOfLeadingZeros(n)) + 8;
      while (lo < hi) {
        if (budget-- == 0) {
          java.util.Arrays.sort(a, lo, hi + 1);
          break;
        }
        int mid = (lo + hi) >>> 1;
        long x = a[lo];
        long y = a[mid];
        long z = a[hi];
        long pivot = x < y ? (y < z ? y : Math.max(x, z)) : (x < z ? x : Math.max(y, z));
        int i = lo;
        int j = hi;
        while (i <= j) {
          while (a[i] < pivot) {
            i++;
          }
          while (a[j] > pivot) {
            j--;
          }
          if (i <= j) {
            long tmp = a[i];
            a[i] = a[j];
            a[j] = tmp;
            i++;
            j--;
          }
        }
        if (target <= j) {
          hi = j;
        } else if (target >= i) {
          lo = i;
        } else {
          break;
        }
      }
      System.arraycopy(a, target, a, 0, k);
      return k;
    }
    return n;
  }

  /** The {@code k} greatest of {@code values} (distinct), ascending: {@link #best(long[], int, int)} on a copy. */
  public static long[] best(long[] values, int k) {
    long[] a = values.clone();
    int n = best(a, a.length, k);
    long[] out = java.util.Arrays.copyOf(a, n);
    java.util.Arrays.sort(out);
    return out;
  }

  /** Each rank's Lucene doc number (the inverse of {@code rank}, a permutation). */
  private static int[] docOfRank(int[] rank) {
    int[] doc = new int[rank.length];
    for (int g = 0; g < rank.length; g++) {
      doc[rank[g]] = g;
    }
    return doc;
  }

  /** What every query of one call shares: the index, the cells, the depth, and each thread's scratch. */
  private static final class Pass {
    final IndexSearcher searcher;
    final IndexReader reader;
    final CollectionStatistics collection;
    final String field;
    final int k;
    final Similarity[] sims;
    final int[] rank;
    /** per thread: each docid rank's slot in the current query (stale entries are never read) */
    final ThreadLocal<int[]> slotOfRank;

    Pass(IndexSearcher searcher, String field, int k, Similarity[] sims, int[] rank) throws Exception {
      this.searcher = searcher;
      this.reader = searcher.getIndexReader();
      this.collection = searcher.collectionStatistics(field);
      this.field = field;
      this.k = k;
      this.sims = sims;
      this.rank = rank;
      this.slotOfRank = ThreadLocal.withInitial(() -> new int[rank.length]);
    }
  }

  /**
   * One query's k best hits under every cell, each cell's packed ({@link #pack}) in no order
   * (null: the query has no term of the index).
   */
  private static long[][] score(Pass pass, Object query) throws Exception {
    final IndexSearcher searcher = pass.searcher;
    final IndexReader reader = pass.reader;
    final CollectionStatistics collection = pass.collection;
    final String field = pass.field;
    final int k = pass.k;
    final Similarity[] sims = pass.sims;
    final int[] rank = pass.rank;
    final int[] slotOfRank = pass.slotOfRank.get();
    final int cells = sims.length;
    Clauses cl = clauses((Query) query);
    final int m = cl.terms.size();
    if (m == 0 || collection == null) {
      return null;
    }
    // each term's statistics as Lucene's TermWeight reads them; a term of no document is dropped,
    // as Lucene's TermWeight scores nothing for it
    List<TermStates> states = new ArrayList<>();
    List<Integer> keep = new ArrayList<>();
    for (int j = 0; j < m; j++) {
      TermStates ts = TermStates.build(searcher, cl.terms.get(j), true);
      if (ts.docFreq() > 0) {
        states.add(ts);
        keep.add(j);
      }
    }
    final int t = keep.size();
    final Similarity.SimScorer[][] scorer = new Similarity.SimScorer[cells][t];
    for (int j = 0; j < t; j++) {
      int at = keep.get(j);
      TermStatistics stats = searcher.termStatistics(cl.terms.get(at), states.get(j).docFreq(),
          states.get(j).totalTermFreq());
      for (int c = 0; c < cells; c++) {
        scorer[c][j] = sims[c].scorer(cl.boosts.get(at), collection, stats);
      }
    }
    // 1. read the postings once, document at a time over every segment: each matching live
    //    document gets a slot (its docid rank and norm), each term its (slot, freq) postings
    final int[] start = new int[t + 1];
    for (int j = 0; j < t; j++) {
      start[j + 1] = start[j] + states.get(j).docFreq();  // docFreq counts deleted documents too: a bound
    }
    final int[] slotOf = new int[start[t]];
    final float[] freqOf = new float[start[t]];
    final int[] fill = new int[t];
    System.arraycopy(start, 0, fill, 0, t);
    int matched = 0;
    int[] rankOf = new int[1024];
    long[] normOf = new long[1024];
    final PostingsEnum[] post = new PostingsEnum[t];
    for (LeafReaderContext leaf : reader.leaves()) {
      LeafReader lr = leaf.reader();
      Terms terms = lr.terms(field);
      if (terms == null) {
        continue;
      }
      TermsEnum te = terms.iterator();
      int live = 0;
      for (int j = 0; j < t; j++) {
        post[j] = te.seekExact(cl.terms.get(keep.get(j)).bytes()) ? te.postings(null, PostingsEnum.FREQS) : null;
        if (post[j] != null && post[j].nextDoc() != DocIdSetIterator.NO_MORE_DOCS) {
          live++;
        } else {
          post[j] = null;
        }
      }
      NumericDocValues norms = lr.getNormValues(field);
      Bits liveDocs = lr.getLiveDocs();
      while (live > 0) {
        int doc = DocIdSetIterator.NO_MORE_DOCS;
        for (int j = 0; j < t; j++) {
          if (post[j] != null && post[j].docID() < doc) {
            doc = post[j].docID();
          }
        }
        boolean alive = liveDocs == null || liveDocs.get(doc);
        if (alive) {
          if (matched == rankOf.length) {
            rankOf = java.util.Arrays.copyOf(rankOf, 2 * matched);
            normOf = java.util.Arrays.copyOf(normOf, 2 * matched);
          }
          long norm = 1L;
          if (norms != null && norms.advanceExact(doc)) {
            norm = norms.longValue();
          }
          rankOf[matched] = rank[leaf.docBase + doc];
          slotOfRank[rankOf[matched]] = matched;
          normOf[matched] = norm;
        }
        for (int j = 0; j < t; j++) {
          if (post[j] != null && post[j].docID() == doc) {
            if (alive) {
              slotOf[fill[j]] = matched;
              freqOf[fill[j]] = post[j].freq();
              fill[j]++;
            }
            if (post[j].nextDoc() == DocIdSetIterator.NO_MORE_DOCS) {
              post[j] = null;
              live--;
            }
          }
        }
        if (alive) {
          matched++;
        }
      }
    }
    // 2. each cell in turn, term at a time: its scorers stay in the cache. A document's clauses are
    //    summed in double in the query's term order, as document at a time would (and as Lucene's
    //    disjunction does), then cast to float
    // 3. the cell's k best: neighbouring cells rank alike, so the previous cell's k best, scored
    //    under this cell, bound its k-th best from below (k documents score at least their least);
    //    only the documents at or above that bound are packed and selected among
    long[][] top = new long[cells][];
    final double[] acc = new double[matched];
    final long[] buf = new long[matched];
    for (int c = 0; c < cells; c++) {
      java.util.Arrays.fill(acc, 0.0);
      final Similarity.SimScorer[] sc = scorer[c];
      for (int j = 0; j < t; j++) {
        final Similarity.SimScorer s = sc[j];
        for (int p = start[j], end = fill[j]; p < end; p++) {
          final int slot = slotOf[p];
          acc[slot] += s.score(freqOf[p], normOf[slot]);
        }
      }
      int candidates;
      if (c == 0 || matched <= k) {
        for (int d = 0; d < matched; d++) {
          buf[d] = pack((float) acc[d], rankOf[d]);
        }
        candidates = matched;
      } else {
        long bound = Long.MAX_VALUE;
        for (long prev : top[c - 1]) {
          int slot = slotOfRank[rank(prev)];
          bound = Math.min(bound, pack((float) acc[slot], rankOf[slot]));
        }
        final float least = score(bound);
        candidates = 0;
        for (int d = 0; d < matched; d++) {
          float f = (float) acc[d];
          if (f >= least) {
            buf[candidates++] = pack(f, rankOf[d]);
          }
        }
      }
      int n = best(buf, candidates, k);
      top[c] = java.util.Arrays.copyOf(buf, n);
    }
    return top;
  }

  /**
   * Returns {@code {int[] docs, float[] scores, int[] counts}}: cell {@code c}'s hits for query
   * {@code i} are {@code docs[(c*n + i)*k ..][0 .. counts[c*n + i])}, best first, for
   * {@code n = texts.length} queries. {@code sims}: one similarity per cell; {@code rank}: each
   * Lucene doc number's position in docid order (the tie-break).
   */
  public static Object[] search(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                                String[] texts, int k, Similarity[] sims, int[] rank, int threads) throws Exception {
    final Method build = generator.getClass().getMethod("buildQuery", String.class, Analyzer.class, String.class);
    final int n = texts.length;
    final int cells = sims.length;
    final long slots = (long) cells * n * k;
    if (slots > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("too many hits for one call: " + slots);
    }
    final int[] docs = new int[(int) slots];
    final float[] scores = new float[(int) slots];
    final int[] counts = new int[cells * n];
    final Pass pass = new Pass(searcher, field, k, sims, rank);
    final int[] docOf = docOfRank(rank);
    BatchSearch.forEachQuery(n, threads, i -> {
      long[][] top = score(pass, build.invoke(generator, field, analyzer, texts[i]));
      for (int c = 0; c < cells; c++) {
        int at = (c * n + i);
        long[] hits = top == null ? new long[0] : top[c].clone();
        java.util.Arrays.sort(hits);  // worst first
        int got = hits.length;
        for (int h = 0; h < got; h++) {  // best first
          long p = hits[got - 1 - h];
          docs[at * k + h] = docOf[rank(p)];
          scores[at * k + h] = score(p);
        }
        counts[at] = got;
      }
    });
    return new Object[] {docs, scores, counts};
  }

  /** Measures the one-pass evaluation computes as trec_eval does (other measures: through the runs). */
  static final class Measure {
    final String kind;  // RR, AP, Bpref, P, R, Success
    final int cutoff;   // 0: none

    Measure(String name) {
      int at = name.indexOf('@');
      kind = at < 0 ? name : name.substring(0, at);
      cutoff = at < 0 ? 0 : Integer.parseInt(name.substring(at + 1));
      boolean known = kind.equals("RR") || kind.equals("AP") || kind.equals("Bpref")
          || ((kind.equals("P") || kind.equals("R") || kind.equals("Success")) && cutoff > 0);
      if (!known || (cutoff > 0 && (kind.equals("RR") || kind.equals("AP") || kind.equals("Bpref")))) {
        throw new IllegalArgumentException("not a measure the one-pass evaluation computes: " + name);
      }
    }
  }

  /**
   * trec_eval's value of {@code m} for one ranking: {@code rel[i]} is the relevance of the document
   * at rank i+1 (-1: not judged), {@code numRel} the judged relevant (rel ≥ 1) of the topic,
   * {@code numNonrel} its judged non-relevant (rel 0). As trec_eval's m_recip_rank, m_map, m_bpref,
   * m_P, m_recall and m_success compute them (relevance level 1).
   */
  static double value(Measure m, int[] rel, int n, long numRel, long numNonrel) {
    switch (m.kind) {
      case "RR":
        for (int i = 0; i < n; i++) {
          if (rel[i] >= 1) {
            return 1.0 / (double) (i + 1);
          }
        }
        return 0.0;
      case "AP": {
        if (numRel == 0) {
          return 0.0;
        }
        double sum = 0.0;
        long relSoFar = 0;
        for (int i = 0; i < n; i++) {
          if (rel[i] >= 1) {
            relSoFar++;
            sum += (double) relSoFar / (double) (i + 1);
          }
        }
        return sum / (double) numRel;
      }
      case "Bpref": {
        double bpref = 0.0;
        long nonrelSoFar = 0;
        for (int i = 0; i < n; i++) {
          if (rel[i] < 0) {
            continue;
          }
          if (rel[i] < 1) {
            nonrelSoFar++;
          } else if (nonrelSoFar > 0) {
            bpref += 1.0 - ((double) Math.min(nonrelSoFar, numRel)) / (double) Math.min(numNonrel, numRel);
          } else {
            bpref += 1.0;
          }
        }
        return numRel > 0 ? bpref / numRel : bpref;
      }
      default: {
        long found = 0;
        for (int i = 0; i < Math.min(n, m.cutoff); i++) {
          if (rel[i] >= 1) {
            found++;
          }
        }
        if (m.kind.equals("P")) {
          return (double) found / (double) m.cutoff;
        }
        if (m.kind.equals("R")) {
          return numRel > 0 ? (double) found / (double) numRel : 0.0;
        }
        return found > 0 ? 1.0 : 0.0;
      }
    }
  }

  /**
   * Every cell's per-topic values of {@code measures}, from one pass, without handing a ranking to
   * Python: {@code double[(c*n + i)*M + j]} for cell c, query i, measure j, and, at
   * {@code [cells*n*M + c*n + i]}, 1 where the cell's ranking of query i is empty. Each cell's
   * ranking is what nteval's run file of it holds: {@code depth + extra} hits searched, the query's
   * {@code held} documents dropped, scores rounded to 6 decimals, trec_eval's order (score
   * descending, then docid descending), the first {@code depth} kept; then each measure as
   * trec_eval computes it on that ranking against the judgments {@code judged[i]} (Lucene doc
   * numbers, -1 for a document the index lacks) with relevance {@code rels[i]}.
   */
  public static double[] evaluate(IndexSearcher searcher, Object generator, Analyzer analyzer, String field,
                                  String[] texts, int depth, int extra, Similarity[] sims, int[] rank,
                                  int[][] judged, int[][] rels, int[][] held, String[] measures, int threads)
      throws Exception {
    final Method build = generator.getClass().getMethod("buildQuery", String.class, Analyzer.class, String.class);
    final int n = texts.length;
    final int cells = sims.length;
    final Measure[] ms = new Measure[measures.length];
    for (int j = 0; j < ms.length; j++) {
      ms[j] = new Measure(measures[j]);
    }
    final int nm = ms.length;
    final double[] out = new double[cells * n * nm + cells * n];
    final IndexReader reader = searcher.getIndexReader();
    final int k = depth + extra;
    final Pass pass = new Pass(searcher, field, k, sims, rank);
    final int[] docOf = docOfRank(rank);
    // per thread: a mark per document (judged, held) stamped with the query's number + 1, so nothing
    // is cleared between queries
    final int maxDoc = reader.maxDoc();
    final ThreadLocal<int[][]> marks = ThreadLocal.withInitial(() -> new int[][] {new int[maxDoc], new int[maxDoc],
        new int[maxDoc]});
    BatchSearch.forEachQuery(n, threads, i -> {
      final int[][] mk = marks.get();
      final int[] judgedAt = mk[0];
      final int[] relOf = mk[1];
      final int[] heldAt = mk[2];
      final int stamp = i + 1;
      long numRel = 0;
      long numNonrel = 0;
      for (int j = 0; j < judged[i].length; j++) {
        if (rels[i][j] >= 1) {
          numRel++;
        } else if (rels[i][j] == 0) {
          numNonrel++;
        }
        if (judged[i][j] >= 0) {
          judgedAt[judged[i][j]] = stamp;
          relOf[judged[i][j]] = rels[i][j];
        }
      }
      for (int d : held[i]) {
        heldAt[d] = stamp;
      }
      long[][] top = score(pass, build.invoke(generator, field, analyzer, texts[i]));
      long[] order = new long[k];
      long[] keyOf = new long[k];
      int[] rankOf = new int[k];
      int[] rel = new int[k];
      for (int c = 0; c < cells; c++) {
        long[] hits = top == null ? new long[0] : top[c];
        int got = hits.length;
        // a run file's ranking: the held documents dropped, scores to 6 decimals (exact for a float:
        // rint of the product cannot fall on the wrong side of a half), then trec_eval's order, score
        // descending and docid descending, as one long (score << 32 | rank) sorted ascending, read
        // from the end; a score outside 0 ≤ score·1e6 < 2^31 cannot be packed so (never for BM25
        // or QLD, both ≥ 0 and far below 2,147): sorted by a comparator instead
        int kept = 0;
        boolean packable = true;
        for (int h = got - 1; h >= 0; h--) {
          int r = rank(hits[h]);
          if (heldAt[docOf[r]] == stamp) {
            continue;
          }
          long key = (long) Math.rint((double) score(hits[h]) * 1e6);
          packable &= key >= 0 && key <= Integer.MAX_VALUE;
          keyOf[kept] = key;
          rankOf[kept] = r;
          kept++;
        }
        if (packable) {
          for (int h = 0; h < kept; h++) {
            order[h] = (keyOf[h] << 32) | rankOf[h];
          }
          java.util.Arrays.sort(order, 0, kept);
        } else {
          Integer[] at = new Integer[kept];
          for (int h = 0; h < kept; h++) {
            at[h] = h;
          }
          java.util.Arrays.sort(at, (a, b2) -> keyOf[a] != keyOf[b2] ? Long.compare(keyOf[a], keyOf[b2])
              : Integer.compare(rankOf[a], rankOf[b2]));
          for (int h = 0; h < kept; h++) {
            order[h] = rankOf[at[h]];
          }
        }
        int len = Math.min(kept, depth);
        for (int h = 0; h < len; h++) {
          int r = (int) (order[kept - 1 - h] & 0xffffffffL);  // the rank at position h
          int d = docOf[r];
          rel[h] = judgedAt[d] == stamp ? relOf[d] : -1;
        }
        int base = (c * n + i) * nm;
        for (int j = 0; j < nm; j++) {
          out[base + j] = len == 0 ? 0.0 : value(ms[j], rel, len, numRel, numNonrel);
        }
        out[cells * n * nm + c * n + i] = len == 0 ? 1.0 : 0.0;
      }
    });
    return out;
  }
}
