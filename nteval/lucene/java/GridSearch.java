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
 * matching posting once (document at a time, over every segment) and scores it under every cell's
 * {@link Similarity}, keeping one top-{@code k} list per cell: exhaustive evaluation, no dynamic
 * pruning, so nothing differs per cell but the scores.
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

  /** The k best (score descending, docid rank ascending) of one cell, as a bounded heap. */
  private static final class Top {
    final int k;
    final float[] score;
    final int[] rank;
    final int[] doc;
    int size;

    Top(int k) {
      this.k = k;
      score = new float[k];
      rank = new int[k];
      doc = new int[k];
    }

    /** a is worse than b: lower score, or the same score and a later docid. */
    private boolean worse(int a, int b) {
      return score[a] < score[b] || (score[a] == score[b] && rank[a] > rank[b]);
    }

    private void swap(int a, int b) {
      float s = score[a]; score[a] = score[b]; score[b] = s;
      int r = rank[a]; rank[a] = rank[b]; rank[b] = r;
      int d = doc[a]; doc[a] = doc[b]; doc[b] = d;
    }

    private void down(int i) {
      while (true) {
        int l = 2 * i + 1;
        int r = l + 1;
        int w = i;
        if (l < size && worse(l, w)) {
          w = l;
        }
        if (r < size && worse(r, w)) {
          w = r;
        }
        if (w == i) {
          return;
        }
        swap(i, w);
        i = w;
      }
    }

    void offer(float s, int rk, int d) {
      if (size < k) {
        int i = size++;
        score[i] = s; rank[i] = rk; doc[i] = d;
        while (i > 0) {
          int p = (i - 1) / 2;
          if (!worse(i, p)) {
            break;
          }
          swap(i, p);
          i = p;
        }
      } else if (s > score[0] || (s == score[0] && rk < rank[0])) {
        score[0] = s; rank[0] = rk; doc[0] = d;
        down(0);
      }
    }

    /** Best first into the flat arrays at {@code at}; returns how many. */
    int drain(int[] docs, float[] scores, int at) {
      int n = size;
      for (int i = n - 1; i >= 0; i--) {  // pop the worst into the last free slot
        docs[at + i] = doc[0];
        scores[at + i] = score[0];
        size--;
        if (size > 0) {
          swap(0, size);
          down(0);
        }
      }
      return n;
    }
  }


  /** One query's k best documents under every cell (null: the query has no term of the index). */
  private static Top[] score(IndexSearcher searcher, IndexReader reader, CollectionStatistics collection, Object query,
                             String field, int k, Similarity[] sims, int[] rank) throws Exception {
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
    Top[] top = new Top[cells];
    for (int c = 0; c < cells; c++) {
      top[c] = new Top(k);
    }
    final PostingsEnum[] post = new PostingsEnum[t];
    final float[] freq = new float[t];
    final boolean[] on = new boolean[t];
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
        for (int j = 0; j < t; j++) {
          on[j] = post[j] != null && post[j].docID() == doc;
          if (on[j]) {
            freq[j] = post[j].freq();
          }
        }
        if (liveDocs == null || liveDocs.get(doc)) {
          long norm = 1L;
          if (norms != null && norms.advanceExact(doc)) {
            norm = norms.longValue();
          }
          int global = leaf.docBase + doc;
          int rk = rank[global];
          for (int c = 0; c < cells; c++) {
            double s = 0;
            for (int j = 0; j < t; j++) {
              if (on[j]) {
                s += scorer[c][j].score(freq[j], norm);
              }
            }
            top[c].offer((float) s, rk, global);
          }
        }
        for (int j = 0; j < t; j++) {
          if (on[j] && post[j].nextDoc() == DocIdSetIterator.NO_MORE_DOCS) {
            post[j] = null;
            live--;
          }
        }
      }
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
    final IndexReader reader = searcher.getIndexReader();
    final CollectionStatistics collection = searcher.collectionStatistics(field);
    BatchSearch.forEachQuery(n, threads, i -> {
      Top[] top = score(searcher, reader, collection, build.invoke(generator, field, analyzer, texts[i]), field, k,
          sims, rank);
      for (int c = 0; c < cells; c++) {
        int at = (c * n + i);
        counts[at] = top == null ? 0 : top[c].drain(docs, scores, at * k);
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
    final CollectionStatistics collection = searcher.collectionStatistics(field);
    final int k = depth + extra;
    BatchSearch.forEachQuery(n, threads, i -> {
      java.util.HashMap<Integer, Integer> relOf = new java.util.HashMap<>();
      long numRel = 0;
      long numNonrel = 0;
      for (int j = 0; j < judged[i].length; j++) {
        if (rels[i][j] >= 1) {
          numRel++;
        } else if (rels[i][j] == 0) {
          numNonrel++;
        }
        if (judged[i][j] >= 0) {
          relOf.put(judged[i][j], rels[i][j]);
        }
      }
      java.util.HashSet<Integer> drop = new java.util.HashSet<>();
      for (int d : held[i]) {
        drop.add(d);
      }
      Top[] top = score(searcher, reader, collection, build.invoke(generator, field, analyzer, texts[i]), field, k,
          sims, rank);
      int[] docs = new int[k];
      float[] scores = new float[k];
      long[] key = new long[k];
      int[] rk = new int[k];
      int[] rel = new int[k];
      Integer[] order = new Integer[k];
      for (int c = 0; c < cells; c++) {
        int got = top == null ? 0 : top[c].drain(docs, scores, 0);
        int kept = 0;
        for (int h = 0; h < got; h++) {
          if (drop.contains(docs[h])) {
            continue;
          }
          // a run file's score: 6 decimals (exact for a float: rint of the product cannot fall on the
          // wrong side of a half), ties then in trec_eval's order, docid descending
          key[kept] = (long) Math.rint((double) scores[h] * 1e6);
          rk[kept] = rank[docs[h]];
          docs[kept] = docs[h];
          kept++;
        }
        for (int h = 0; h < kept; h++) {
          order[h] = h;
        }
        java.util.Arrays.sort(order, 0, kept, (a, b) -> key[a] != key[b] ? Long.compare(key[b], key[a])
            : Integer.compare(rk[b], rk[a]));
        int len = Math.min(kept, depth);
        for (int h = 0; h < len; h++) {
          Integer r = relOf.get(docs[order[h]]);
          rel[h] = r == null ? -1 : r;
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
