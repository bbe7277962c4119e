// The Debian-driver scenario through the Java driver Debian packages (libmongodb-java 3.6.3, the
// synchronous API): the steps tests/clients/debian_drivers.py lists, each checked.
// Built with javac against /usr/share/java/mongo-java-driver.jar; the connection string comes in
// MAYFLY_URI. Prints "ok" when every check passed; any failure is an exception (exit code 1).
import com.mongodb.MongoClient;
import com.mongodb.MongoClientURI;
import com.mongodb.MongoWriteException;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.Accumulators;
import com.mongodb.client.model.Aggregates;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import com.mongodb.client.result.UpdateResult;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bson.Document;

public final class Scenario {
    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    private static List<Object> ids(MongoCollection<Document> c) {
        List<Object> ids = new ArrayList<>();
        for (Document d : c.find().sort(Sorts.ascending("_id"))) {
            ids.add(d.get("_id"));
        }
        return ids;
    }

    public static void main(String[] args) {
        MongoClient client = new MongoClient(new MongoClientURI(System.getenv("MAYFLY_URI")));
        MongoDatabase admin = client.getDatabase("admin");
        MongoDatabase db = client.getDatabase("drivers_java");
        db.drop();

        // CRUD, on a collection created through the driver (3.x sends autoIndexId: true).
        db.createCollection("items");
        MongoCollection<Document> items = db.getCollection("items");
        items.insertOne(new Document("_id", 1).append("name", "one"));
        check("one".equals(items.find(Filters.eq("_id", 1)).first().getString("name")), "find one");
        UpdateResult updated = items.updateOne(Filters.eq("_id", 1), Updates.set("name", "uno"));
        check(updated.getMatchedCount() == 1 && updated.getModifiedCount() == 1, "update: " + updated);
        check("uno".equals(items.find(Filters.eq("_id", 1)).first().getString("name")), "updated");
        check(items.deleteOne(Filters.eq("_id", 1)).getDeletedCount() == 1, "delete");
        check(items.count() == 0, "empty after delete");

        // A cursor over 1,000 documents in batches of 50.
        List<Document> many = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            many.add(new Document("_id", i).append("n", i).append("parity", i % 2));
        }
        items.insertMany(many);
        int seen = 0;
        try (MongoCursor<Document> cursor =
                items.find().sort(Sorts.ascending("_id")).batchSize(50).iterator()) {
            while (cursor.hasNext()) {
                check(cursor.next().getInteger("_id") == seen, "cursor order at " + seen);
                seen++;
            }
        }
        check(seen == 1000, "cursor saw " + seen);

        // An upsert, then the same update matching the upserted document.
        UpdateResult upsert = items.updateOne(
                Filters.eq("_id", "u"), Updates.set("v", 1), new UpdateOptions().upsert(true));
        check(upsert.getUpsertedId() != null && upsert.getMatchedCount() == 0, "upsert: " + upsert);
        upsert = items.updateOne(
                Filters.eq("_id", "u"), Updates.set("v", 1), new UpdateOptions().upsert(true));
        check(upsert.getUpsertedId() == null && upsert.getMatchedCount() == 1, "matched: " + upsert);

        // aggregate: $match + $group.
        List<Document> groups = new ArrayList<>();
        items.aggregate(Arrays.asList(
                Aggregates.match(Filters.gte("n", 500)),
                Aggregates.group("$parity", Accumulators.sum("count", 1)),
                Aggregates.sort(Sorts.ascending("_id")))).into(groups);
        check(groups.equals(Arrays.asList(
                new Document("_id", 0).append("count", 250),
                new Document("_id", 1).append("count", 250))), "groups: " + groups);

        // The _ts TTL index through the driver's index API, a document's own ttl, exact expiry.
        admin.runCommand(new Document("reaper", "pause"));
        admin.runCommand(new Document("reaper", "runOnce"));
        MongoCollection<Document> expiring = db.getCollection("expiring");
        // recipe:start
        expiring.createIndex(Indexes.ascending("_ts"), new IndexOptions().expireAfter(10L, TimeUnit.SECONDS));
        // recipe:end
        boolean shown = false;
        for (Document index : expiring.listIndexes()) {
            shown |= "_ts_1".equals(index.getString("name"))
                    && ((Number) index.get("expireAfterSeconds")).intValue() == 10;
        }
        check(shown, "listIndexes shows _ts_1 with expireAfterSeconds 10");
        expiring.insertMany(Arrays.asList(
                new Document("_id", "default"),
                new Document("_id", "own").append("ttl", 20L),
                new Document("_id", "never").append("ttl", -1)));
        admin.runCommand(new Document("advanceClock", 9));
        check(ids(expiring).size() == 3, "all three at T+9: " + ids(expiring));
        admin.runCommand(new Document("advanceClock", 1));
        check(ids(expiring).equals(Arrays.asList("never", "own")), "T+10: " + ids(expiring));
        admin.runCommand(new Document("advanceClock", 10));
        check(ids(expiring).equals(Arrays.asList("never")), "T+20: " + ids(expiring));
        Number reaped = (Number) admin.runCommand(new Document("reaper", "runOnce")).get("reaped");
        check(reaped.intValue() == 2, "reaped " + reaped);
        admin.runCommand(new Document("reaper", "resume"));

        // MongoDB's own TTL model: a TTL index on a date field; a document expires at its date
        // plus the index's value, at the exact second; one whose field holds no date never does.
        MongoCollection<Document> dated = db.getCollection("dated");
        dated.createIndex(Indexes.ascending("at"), new IndexOptions().expireAfter(10L, TimeUnit.SECONDS));
        Date now = new Date(admin.runCommand(new Document("hello", 1)).getDate("localTime").getTime() / 1000 * 1000);
        dated.insertMany(Arrays.asList(
                new Document("_id", "dated").append("at", now),
                new Document("_id", "undated").append("at", "now")));
        boolean datedShown = false;
        for (Document index : dated.listIndexes()) {
            datedShown |= "at_1".equals(index.getString("name"))
                    && ((Number) index.get("expireAfterSeconds")).intValue() == 10;
        }
        check(datedShown, "listIndexes shows at_1 with expireAfterSeconds 10");
        admin.runCommand(new Document("advanceClock", 9));
        check(ids(dated).equals(Arrays.asList("dated", "undated")), "date+9: " + ids(dated));
        admin.runCommand(new Document("advanceClock", 1));
        check(ids(dated).equals(Arrays.asList("undated")), "date+10: " + ids(dated));

        // A duplicate key, with its code.
        try {
            items.insertOne(new Document("_id", 7));
            throw new AssertionError("duplicate _id accepted");
        } catch (MongoWriteException e) {
            check(e.getError().getCode() == 11000, "duplicate key code " + e.getError().getCode());
        }

        client.close();
        System.out.println("ok");
    }
}
