// Collapsed stacks from a JFR recording, per time window: bench's profile device runs this with the JDK the node
// runs (java JfrCollapse.java, the single-file source launcher), so no jar is built or shipped.
//
//   java JfrCollapse.java <recording.jfr> <windows.tsv> <out-dir>
//
// windows.tsv: one window a line, "<name>\t<start epoch ms>\t<end epoch ms>". For each window i, <out-dir>/<i>.collapsed
// gets one line per distinct stack, "root;...;leaf <samples>", Brendan Gregg's folded format. The root frame is the
// sampled thread's pool ("[write]" for "elasticsearch[node-0][write][T#3]"); frames are "package.Class.method";
// a stack JFR cut at its depth limit starts with "[truncated]". Execution samples (threads running Java code) are
// counted; native method samples, if the recording has them, go under a "[native]" root. async-profiler's recordings
// (the same event type) also hold native frames: "libjvm.so.Compile::Optimize", "libc.so.6.write".
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class JfrCollapse {
    private static final Pattern POOL = Pattern.compile(".*\\[([^\\[\\]]+)\\]\\[T#\\d+\\].*");

    static String pool(RecordedThread t) {
        if (t == null) return "[unknown thread]";
        String name = t.getJavaName() != null ? t.getJavaName() : t.getOSName();
        if (name == null) return "[unknown thread]";
        Matcher m = POOL.matcher(name);
        if (m.matches()) return "[" + m.group(1) + "]";
        // the same pool on every node: merges are named after their index and shard, other threads after the node
        if (name.contains("Lucene Merge Thread")) return "[lucene_merge]";
        name = name.replaceFirst("^(elasticsearch|opensearch)\\[[^\\]]*\\]", "");
        return "[" + name.replaceAll("\\d+", "#").replace(';', ',') + "]";
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(args[1]));
        int n = lines.size();
        long[] start = new long[n];
        long[] end = new long[n];
        List<Map<String, Long>> counts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String[] parts = lines.get(i).split("\t");
            start[i] = Long.parseLong(parts[1]);
            end[i] = Long.parseLong(parts[2]);
            counts.add(new HashMap<>());
        }
        try (RecordingFile recording = new RecordingFile(Path.of(args[0]))) {
            while (recording.hasMoreEvents()) {
                RecordedEvent e = recording.readEvent();
                String type = e.getEventType().getName();
                boolean nativeSample = type.equals("jdk.NativeMethodSample");
                if (!nativeSample && !type.equals("jdk.ExecutionSample")) continue;
                RecordedStackTrace trace = e.getStackTrace();
                if (trace == null) continue;
                long t = e.getStartTime().toEpochMilli();
                StringBuilder key = new StringBuilder(nativeSample ? "[native]" : pool(e.getThread("sampledThread")));
                if (nativeSample) key.append(';').append(pool(e.getThread("sampledThread")));
                if (trace.isTruncated()) key.append(";[truncated]");
                List<RecordedFrame> frames = trace.getFrames();
                for (int i = frames.size() - 1; i >= 0; i--) {
                    RecordedMethod m = frames.get(i).getMethod();
                    if (m == null) continue;
                    String cls = m.getType() != null ? m.getType().getName() : "?";
                    key.append(';');
                    // async-profiler's native frames: the library as the class ("libjvm.so"), or none (stubs)
                    if (!cls.isEmpty()) key.append(cls.replace(';', ',')).append('.');
                    key.append(m.getName().replace(';', ','));
                }
                String stack = key.toString();
                for (int w = 0; w < n; w++) {
                    if (t >= start[w] && t <= end[w]) counts.get(w).merge(stack, 1L, Long::sum);
                }
            }
        }
        Path out = Path.of(args[2]);
        Files.createDirectories(out);
        for (int w = 0; w < n; w++) {
            try (BufferedWriter writer = Files.newBufferedWriter(out.resolve(w + ".collapsed"))) {
                for (Map.Entry<String, Long> entry : counts.get(w).entrySet()) {
                    writer.write(entry.getKey() + " " + entry.getValue() + "\n");
                }
            }
        }
    }
}
