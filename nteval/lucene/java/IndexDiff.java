package nteval;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FieldInfos;
import org.apache.lucene.index.Fields;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexableField;
import org.apache.lucene.index.MultiDocValues;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.TermVectors;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

/**
 * Where two Lucene indexes differ in what searching reads: documents in order, stored fields,
 * the {@code id} doc values, field settings, norms, every term's postings with frequencies and
 * positions, and every document's term vector. Segment layout and file bytes are not compared.
 *
 * <p>Used by the tests to hold {@link BuildIndexes} to Anserini's IndexCollection. Usage:
 * {@code IndexDiff A B} prints at most 20 differences and exits 1 if there are any.
 */
public final class IndexDiff {
  private static final int LIMIT = 20;
  private final List<String> found = new ArrayList<>();

  private IndexDiff() {}

  public static void main(String[] args) throws IOException {
    List<String> diffs = diff(args[0], args[1]);
    for (String d : diffs) {
      System.out.println(d);
    }
    System.exit(diffs.isEmpty() ? 0 : 1);
  }

  /** Up to 20 differences between the indexes at paths {@code a} and {@code b}; empty if none. */
  public static List<String> diff(String a, String b) throws IOException {
    try (IndexReader ra = DirectoryReader.open(FSDirectory.open(Paths.get(a)));
         IndexReader rb = DirectoryReader.open(FSDirectory.open(Paths.get(b)))) {
      IndexDiff d = new IndexDiff();
      d.compare(ra, rb);
      return d.found;
    }
  }

  private boolean note(String what) {
    if (found.size() < LIMIT) {
      found.add(what);
    }
    return found.size() < LIMIT;
  }

  private void compare(IndexReader a, IndexReader b) throws IOException {
    if (a.maxDoc() != b.maxDoc() || a.numDocs() != b.numDocs()) {
      note("documents: " + a.numDocs() + "/" + a.maxDoc() + " vs " + b.numDocs() + "/" + b.maxDoc());
      return;
    }
    FieldInfos fa = FieldInfos.getMergedFieldInfos(a);
    FieldInfos fb = FieldInfos.getMergedFieldInfos(b);
    for (FieldInfo x : fa) {
      FieldInfo y = fb.fieldInfo(x.name);
      if (y == null) {
        note("field " + x.name + " only in the first");
      } else if (x.getIndexOptions() != y.getIndexOptions() || x.hasVectors() != y.hasVectors()
          || x.hasNorms() != y.hasNorms() || x.getDocValuesType() != y.getDocValuesType()
          || x.hasPayloads() != y.hasPayloads()) {
        note("field " + x.name + " settings differ");
      }
    }
    for (FieldInfo y : fb) {
      if (fa.fieldInfo(y.name) == null) {
        note("field " + y.name + " only in the second");
      }
    }
    compareDocuments(a, b);
    for (FieldInfo x : fa) {
      if (x.getIndexOptions() != org.apache.lucene.index.IndexOptions.NONE && fb.fieldInfo(x.name) != null) {
        compareTerms(x.name, MultiTerms.getTerms(a, x.name), MultiTerms.getTerms(b, x.name), "postings ");
        if (x.hasNorms()) {
          compareNorms(x.name, MultiDocValues.getNormValues(a, x.name), MultiDocValues.getNormValues(b, x.name));
        }
      }
    }
  }

  private void compareDocuments(IndexReader a, IndexReader b) throws IOException {
    StoredFields sa = a.storedFields();
    StoredFields sb = b.storedFields();
    TermVectors va = a.termVectors();
    TermVectors vb = b.termVectors();
    BinaryDocValues ia = MultiDocValues.getBinaryValues(a, "id");
    BinaryDocValues ib = MultiDocValues.getBinaryValues(b, "id");
    for (int doc = 0; doc < a.maxDoc(); doc++) {
      List<IndexableField> xs = sa.document(doc).getFields();
      List<IndexableField> ys = sb.document(doc).getFields();
      if (xs.size() != ys.size()) {
        if (!note("doc " + doc + ": " + xs.size() + " vs " + ys.size() + " stored fields")) {
          return;
        }
        continue;
      }
      for (int i = 0; i < xs.size(); i++) {
        IndexableField x = xs.get(i);
        IndexableField y = ys.get(i);
        if (!x.name().equals(y.name()) || !String.valueOf(x.stringValue()).equals(String.valueOf(y.stringValue()))) {
          if (!note("doc " + doc + ": stored field " + x.name() + " differs")) {
            return;
          }
        }
      }
      if (ia != null && ib != null) {
        boolean ha = ia.advanceExact(doc);
        boolean hb = ib.advanceExact(doc);
        if (ha != hb || (ha && !ia.binaryValue().equals(ib.binaryValue()))) {
          note("doc " + doc + ": id doc value differs");
        }
      } else if ((ia == null) != (ib == null)) {
        note("id doc values in only one index");
        ia = ib = null;
      }
      Fields ta = va.get(doc);
      Fields tb = vb.get(doc);
      if ((ta == null) != (tb == null)) {
        note("doc " + doc + ": term vector in only one index");
      } else if (ta != null) {
        for (String field : ta) {
          compareTerms(field, ta.terms(field), tb.terms(field), "doc " + doc + " vector ");
        }
      }
      if (found.size() >= LIMIT) {
        return;
      }
    }
  }

  private void compareNorms(String field, NumericDocValues a, NumericDocValues b) throws IOException {
    if (a == null || b == null) {
      if (a != b) {
        note("norms of " + field + " in only one index");
      }
      return;
    }
    for (int doc = a.nextDoc(); ; doc = a.nextDoc()) {
      int other = b.nextDoc();  // in step: a document with a norm in only one of them shows
      if (doc != other) {
        note("norms of " + field + ": doc " + doc + " vs " + other);
        return;
      }
      if (doc == DocIdSetIterator.NO_MORE_DOCS) {
        return;
      }
      if (a.longValue() != b.longValue()) {
        note("norm of " + field + " differs at doc " + doc);
        return;
      }
    }
  }

  private void compareTerms(String field, Terms a, Terms b, String where) throws IOException {
    if (a == null || b == null) {
      if (a != b) {
        note(where + field + ": terms in only one");
      }
      return;
    }
    TermsEnum ea = a.iterator();
    TermsEnum eb = b.iterator();
    PostingsEnum pa = null;
    PostingsEnum pb = null;
    for (BytesRef x = ea.next(); ; x = ea.next()) {
      BytesRef y = eb.next();
      if (x == null || y == null) {
        if (x != y) {
          note(where + field + ": term lists differ in length");
        }
        return;
      }
      if (!x.equals(y)) {
        note(where + field + ": term " + x.utf8ToString() + " vs " + y.utf8ToString());
        return;
      }
      if (ea.docFreq() != eb.docFreq() || ea.totalTermFreq() != eb.totalTermFreq()) {
        note(where + field + ": statistics of " + x.utf8ToString() + " differ");
        return;
      }
      pa = ea.postings(pa, PostingsEnum.POSITIONS);
      pb = eb.postings(pb, PostingsEnum.POSITIONS);
      for (int doc = pa.nextDoc(); ; doc = pa.nextDoc()) {
        int other = pb.nextDoc();
        if (doc != other) {
          note(where + field + ": " + x.utf8ToString() + " in doc " + doc + " vs " + other);
          return;
        }
        if (doc == DocIdSetIterator.NO_MORE_DOCS) {
          break;
        }
        if (pa.freq() != pb.freq()) {
          note(where + field + ": freq of " + x.utf8ToString() + " in doc " + doc);
          return;
        }
        for (int i = 0; i < pa.freq(); i++) {
          int p = pa.nextPosition();
          int q = pb.nextPosition();
          if (p != q) {
            note(where + field + ": position of " + x.utf8ToString() + " in doc " + doc + ": " + p + " vs " + q);
            return;
          }
        }
      }
    }
  }
}
