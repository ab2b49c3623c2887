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
      Query q = (Query) build.invoke(generator, field, analyzer, texts[i]);
      Clauses cl = clauses(q);
      final int m = cl.terms.size();
      if (m == 0 || collection == null) {
        return;
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
      for (int c = 0; c < cells; c++) {
        int at = (c * n + i);
        counts[at] = top[c].drain(docs, scores, at * k);
      }
    });
    return new Object[] {docs, scores, counts};
  }
}
