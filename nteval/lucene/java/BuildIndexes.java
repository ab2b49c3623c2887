package nteval;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.BytesTermAttribute;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.OffsetAttribute;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.ConcurrentMergeScheduler;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.UnicodeUtil;

/**
 * Both of nteval's Lucene indexes from one pass over the documents: {@code all} (title, a newline,
 * abstract) and {@code nt} (abstract only), each document exactly as Anserini's
 * {@code IndexCollection -collection JsonCollection -generator DefaultLuceneDocumentGenerator
 * -storePositions -storeDocvectors -storeRaw} (one thread) would index it.
 *
 * <p>Why not two IndexCollection runs: every abstract is analysed once instead of twice (the
 * {@code all} field's tokens are the title's followed by the abstract's, since a newline always ends
 * a token), one JVM warms up instead of two, and the input is read once. Anserini's own analyzer
 * ({@code DefaultEnglishAnalyzer.fromArguments("porter", false, null)}, IndexCollection's default)
 * and writer settings are used; {@code tests/index/test_build.py} checks the result term by term,
 * position by position against IndexCollection's.
 *
 * <p>Input, on stdin, one command per line (a JVM warms up once and serves a whole build):
 * <ul>
 *   <li>{@code ["ALL_DIR", "NT_DIR", "BATCH_FILE"]} (a JSON array): index a batch file (JSON
 *       arrays {@code ["id", "title", "abstract"]}, one per line) into the indexes at ALL_DIR and
 *       NT_DIR, created by the first batch that names them and kept open for the next;
 *   <li>an empty line: commit and close them, then print {@link #COMMITTED} on stdout;
 *   <li>end of input: the same, then exit.
 * </ul>
 * nteval writes the next batch file while this one indexes. {@code all}'s documents are written
 * on one thread, {@code nt}'s on another, each in input order; a third (the caller's) reads and
 * analyses.
 *
 * <p>Usage: {@code BuildIndexes BUFFER_MB < commands}; on failure one last stderr line starts
 * with {@code BuildIndexes: } and the exit status is 1.
 */
public final class BuildIndexes {
  private static final String ID = "id";
  private static final String CONTENTS = "contents";
  private static final String RAW = "raw";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** DefaultLuceneDocumentGenerator's contents field with -storePositions -storeDocvectors. */
  static final FieldType CONTENTS_TYPE = new FieldType();
  static {
    CONTENTS_TYPE.setStored(false);
    CONTENTS_TYPE.setStoreTermVectors(true);
    CONTENTS_TYPE.setStoreTermVectorPositions(true);
    CONTENTS_TYPE.setIndexOptions(IndexOptions.DOCS_AND_FREQS_AND_POSITIONS);
    CONTENTS_TYPE.freeze();
  }

  private BuildIndexes() {}

  /** What stdout says once the indexes of a commit are complete on disk. */
  static final String COMMITTED = "nteval-committed";

  public static void main(String[] args) {
    if (args.length != 1) {
      System.err.println("usage: BuildIndexes BUFFER_MB  (commands on stdin, see the class comment)");
      System.exit(2);
    }
    try {
      BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      serve(Integer.parseInt(args[0]), commands);
    } catch (Throwable t) {
      t.printStackTrace();
      System.err.println("BuildIndexes: " + t);  // the line nteval reports
      System.exit(1);
    }
  }

  /** IndexCollection's analyzer with its default arguments (Anserini's classes are reached by
   * reflection: they are Java 21 class files and this one compiles for Java 17). */
  static Analyzer anseriniAnalyzer() throws ReflectiveOperationException {
    return (Analyzer) Class.forName("io.anserini.analysis.DefaultEnglishAnalyzer")
        .getMethod("fromArguments", String.class, boolean.class, String.class)
        .invoke(null, "porter", false, null);
  }

  /** IndexCollection's writer settings (BM25 similarity, no compound files, a RAM buffer). */
  static IndexWriter writer(Path dir, Analyzer analyzer, int bufferMb) throws IOException {
    IndexWriterConfig config = new IndexWriterConfig(analyzer);
    config.setSimilarity(new BM25Similarity());
    config.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
    config.setRAMBufferSizeMB(bufferMb);
    config.setUseCompoundFile(false);
    config.setMergeScheduler(new ConcurrentMergeScheduler());
    return new IndexWriter(FSDirectory.open(dir), config);
  }

  static void serve(int bufferMb, BufferedReader commands) throws Exception {
    Analyzer analyzer = anseriniAnalyzer();
    // On failure nothing is closed or committed: the caller exits, and nteval discards the directories.
    IndexThread all = null;
    IndexThread nt = null;
    String open = null;
    for (String line = commands.readLine(); ; line = commands.readLine()) {
      if (line == null || line.isEmpty()) {
        if (all != null) {
          all.add(END);
          nt.add(END);
          all.finish();
          nt.finish();
          all = nt = null;
          open = null;
          System.out.println(COMMITTED);
          System.out.flush();
        }
        if (line == null) {
          return;
        }
        continue;
      }
      JsonNode command = JSON.readTree(line);
      if (!command.isArray() || command.size() != 3) {
        throw new IllegalArgumentException("not [ALL_DIR, NT_DIR, BATCH_FILE]: " + line);
      }
      String dirs = command.get(0).asText() + "\u0000" + command.get(1).asText();
      if (open == null) {
        all = new IndexThread("all", writer(Paths.get(command.get(0).asText()), analyzer, bufferMb), true);
        nt = new IndexThread("nt", writer(Paths.get(command.get(1).asText()), analyzer, bufferMb), false);
        open = dirs;
      } else if (!open.equals(dirs)) {
        throw new IllegalArgumentException("new indexes named before the open ones were committed: " + line);
      }
      index(Paths.get(command.get(2).asText()), analyzer, all, nt);
    }
  }

  static void index(Path batch, Analyzer analyzer, IndexThread all, IndexThread nt) throws Exception {
    try (BufferedReader in = Files.newBufferedReader(batch, StandardCharsets.UTF_8)) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        JsonNode fields = JSON.readTree(line);
        String title = fields.get(1).asText();
        String abstractText = fields.get(2).asText();
        Row row = new Row(fields.get(0).asText(), title, abstractText, Tokens.of(analyzer, title),
                          Tokens.of(analyzer, abstractText));
        all.add(row);
        nt.add(row);
      }
    }
  }

  /** One input document, analysed once, read by both index threads. */
  record Row(String id, String title, String abstractText, Tokens titleTokens, Tokens abstractTokens) {}

  private static final Row END = new Row(null, null, null, null, null);

  /** One index written on a thread of its own, documents in the order they are added; it commits
   * and closes the index at {@link #END}, so the two final flushes run side by side. */
  static final class IndexThread implements Runnable {
    private final BlockingQueue<Row> queue = new ArrayBlockingQueue<>(512);
    private final IndexWriter writer;
    private final boolean withTitle;
    private final Thread thread;
    private volatile Throwable failure;
    // one document reused for every row (Lucene's advice for fast indexing)
    private final StringField id = new StringField(ID, "", Field.Store.YES);
    private final BinaryDocValuesField idValue = new BinaryDocValuesField(ID, new BytesRef());
    private final StoredField raw = new StoredField(RAW, "");
    private final Replay tokens = new Replay();
    private final ObjectNode rawJson = JSON.createObjectNode();
    private final Document document = new Document();

    IndexThread(String name, IndexWriter writer, boolean withTitle) {
      this.writer = writer;
      this.withTitle = withTitle;
      document.add(id);
      document.add(idValue);
      document.add(raw);
      document.add(new Field(CONTENTS, tokens, CONTENTS_TYPE));
      thread = new Thread(this, name + "-writer");
      thread.setDaemon(true);
      thread.start();
    }

    @Override
    public void run() {
      try {
        for (Row row = queue.take(); row != END; row = queue.take()) {
          String contents = withTitle ? row.title() + "\n" + row.abstractText() : row.abstractText();
          if (contents.trim().isEmpty()) {
            continue;  // DefaultLuceneDocumentGenerator skips a document whose contents are blank
          }
          if (withTitle) {
            tokens.set(row.titleTokens(), row.abstractTokens(), row.title().length() + 1);
          } else {
            tokens.set(row.abstractTokens(), null, 0);
          }
          rawJson.put(ID, row.id());
          rawJson.put(CONTENTS, contents);
          id.setStringValue(row.id());
          idValue.setBytesValue(new BytesRef(row.id()));
          raw.setStringValue(rawJson.toPrettyString());
          writer.addDocument(document);
        }
        writer.close();
      } catch (Throwable t) {
        failure = t;
      }
    }

    void add(Row row) throws InterruptedException {
      while (!queue.offer(row, 100, TimeUnit.MILLISECONDS)) {
        check();
      }
      check();
    }

    void finish() throws InterruptedException {
      thread.join();
      check();
    }

    private void check() {
      if (failure != null) {
        throw new IllegalStateException(thread.getName() + ": " + failure, failure);
      }
    }
  }

  /** One text's analysed tokens: terms (as the UTF-8 bytes Lucene indexes, encoded once here for
   * both indexes instead of once per index by each writer thread), position increments, offsets. */
  static final class Tokens {
    byte[] bytes = new byte[1024];
    int[] ends = new int[64];  // end of term i in bytes
    int[] increments = new int[64];
    int[] starts = new int[64];
    int[] stops = new int[64];
    int size;
    int length;
    int endIncrement;  // position increment reported at end(): tokens removed after the last kept one
    private static byte[] scratch = new byte[256];  // (only the analysing thread makes Tokens)

    static Tokens of(Analyzer analyzer, String text) throws IOException {
      Tokens t = new Tokens();
      try (TokenStream ts = analyzer.tokenStream(CONTENTS, text)) {
        CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
        PositionIncrementAttribute inc = ts.addAttribute(PositionIncrementAttribute.class);
        OffsetAttribute off = ts.addAttribute(OffsetAttribute.class);
        ts.reset();
        while (ts.incrementToken()) {
          t.add(term.buffer(), term.length(), inc.getPositionIncrement(), off.startOffset(), off.endOffset());
        }
        ts.end();
        t.endIncrement = inc.getPositionIncrement();
      }
      return t;
    }

    private void add(char[] term, int len, int increment, int start, int stop) {
      if (size == ends.length) {
        int n = size * 2;
        ends = Arrays.copyOf(ends, n);
        increments = Arrays.copyOf(increments, n);
        starts = Arrays.copyOf(starts, n);
        stops = Arrays.copyOf(stops, n);
      }
      int most = UnicodeUtil.maxUTF8Length(len);
      if (length + most > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + most));
      }
      // what CharTermAttribute.getBytesRef() gives the indexing chain (the same call)
      if (scratch.length < most) {
        scratch = new byte[most];
      }
      int n = UnicodeUtil.UTF16toUTF8(term, 0, len, scratch);
      System.arraycopy(scratch, 0, bytes, length, n);
      length += n;
      ends[size] = length;
      increments[size] = increment;
      starts[size] = start;
      stops[size] = stop;
      size++;
    }
  }

  /**
   * The tokens of {@code first}, then those of {@code second} (may be null), as analysing the two
   * texts joined by a newline gives them: a newline always ends a token, so the joined text's tokens
   * are the first's followed by the second's; the first text's trailing removed tokens (its end
   * increment) add to the second's first increment, and the second's offsets move by
   * {@code secondStart}, where it starts in the joined text. Reused for every document.
   */
  static final class Replay extends TokenStream {
    // The indexing chain reads a token's term through TermToBytesRefAttribute only. This attribute
    // must be added first: the next one's implementation (PackedTokenAttributeImpl) would otherwise
    // claim TermToBytesRefAttribute with an empty CharTermAttribute (every term would be empty).
    private final BytesTermAttribute term = addAttribute(BytesTermAttribute.class);
    private final BytesRef termBytes = new BytesRef();
    private final PositionIncrementAttribute inc = addAttribute(PositionIncrementAttribute.class);
    private final OffsetAttribute off = addAttribute(OffsetAttribute.class);
    private Tokens first;
    private Tokens second;
    private int secondStart;
    private Tokens current;
    private int shift;
    private int i;
    private int lastStop;

    void set(Tokens first, Tokens second, int secondStart) {
      this.first = first;
      this.second = second;
      this.secondStart = secondStart;
    }

    @Override
    public void reset() throws IOException {
      super.reset();
      current = first;
      shift = 0;
      i = 0;
      lastStop = 0;
    }

    @Override
    public boolean incrementToken() {
      int extra = 0;
      if (i == current.size) {
        if (current != first || second == null) {
          return false;
        }
        extra = first.endIncrement;
        current = second;
        shift = secondStart;
        i = 0;
        if (current.size == 0) {
          return false;
        }
      }
      clearAttributes();
      int from = i == 0 ? 0 : current.ends[i - 1];
      termBytes.bytes = current.bytes;  // (Lucene copies the term into its own pool)
      termBytes.offset = from;
      termBytes.length = current.ends[i] - from;
      term.setBytesRef(termBytes);
      inc.setPositionIncrement(current.increments[i] + extra);
      lastStop = shift + current.stops[i];
      off.setOffset(shift + current.starts[i], lastStop);
      i++;
      return true;
    }

    @Override
    public void end() throws IOException {
      super.end();
      off.setOffset(lastStop, lastStop);
    }
  }
}
