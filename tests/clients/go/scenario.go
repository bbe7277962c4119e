// The Debian-driver scenario through the Go driver Debian packages
// (golang-mongodb-mongo-driver-dev 1.8.4): the steps tests/clients/debian_drivers.py lists,
// each checked. Built offline with GO111MODULE=off and
// GOPATH=<build dir>:/usr/share/gocode; the connection string comes in MAYFLY_URI. Prints "ok"
// when every check passed; any failure exits with code 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func check(condition bool, format string, args ...interface{}) {
	if !condition {
		fmt.Fprintf(os.Stderr, "check failed: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	check(err == nil, "%s: %v", what, err)
}

func ids(ctx context.Context, c *mongo.Collection) []interface{} {
	cursor, err := c.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{"_id", 1}}))
	must(err, "find")
	var docs []bson.M
	must(cursor.All(ctx, &docs), "read all")
	out := []interface{}{}
	for _, d := range docs {
		out = append(out, d["_id"])
	}
	return out
}

func command(ctx context.Context, db *mongo.Database, cmd bson.D) bson.M {
	var reply bson.M
	must(db.RunCommand(ctx, cmd).Decode(&reply), fmt.Sprint(cmd))
	return reply
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(os.Getenv("MAYFLY_URI")))
	must(err, "connect")
	defer client.Disconnect(ctx)
	admin := client.Database("admin")
	db := client.Database("drivers_go")
	must(db.Drop(ctx), "drop")

	// CRUD, on a collection created through the driver.
	must(db.CreateCollection(ctx, "items"), "create")
	items := db.Collection("items")
	_, err = items.InsertOne(ctx, bson.D{{"_id", 1}, {"name", "one"}})
	must(err, "insert")
	var one bson.M
	must(items.FindOne(ctx, bson.D{{"_id", 1}}).Decode(&one), "find one")
	check(one["name"] == "one", "found %v", one)
	updated, err := items.UpdateOne(ctx, bson.D{{"_id", 1}}, bson.D{{"$set", bson.D{{"name", "uno"}}}})
	must(err, "update")
	check(updated.MatchedCount == 1 && updated.ModifiedCount == 1, "update %+v", updated)
	must(items.FindOne(ctx, bson.D{{"_id", 1}}).Decode(&one), "find updated")
	check(one["name"] == "uno", "updated %v", one)
	deleted, err := items.DeleteOne(ctx, bson.D{{"_id", 1}})
	must(err, "delete")
	check(deleted.DeletedCount == 1, "deleted %d", deleted.DeletedCount)
	count, err := items.CountDocuments(ctx, bson.D{})
	must(err, "count")
	check(count == 0, "count after delete %d", count)

	// A cursor over 1,000 documents in batches of 50.
	many := make([]interface{}, 0, 1000)
	for i := int32(0); i < 1000; i++ {
		many = append(many, bson.D{{"_id", i}, {"n", i}, {"parity", i % 2}})
	}
	_, err = items.InsertMany(ctx, many)
	must(err, "insert many")
	cursor, err := items.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{"_id", 1}}).SetBatchSize(50))
	must(err, "find")
	seen := int32(0)
	for cursor.Next(ctx) {
		var d struct {
			ID int32 `bson:"_id"`
		}
		must(cursor.Decode(&d), "decode")
		check(d.ID == seen, "cursor order at %d: %d", seen, d.ID)
		seen++
	}
	must(cursor.Err(), "cursor")
	check(seen == 1000, "cursor saw %d", seen)

	// An upsert, then the same update matching the upserted document.
	upsert := options.Update().SetUpsert(true)
	r, err := items.UpdateOne(ctx, bson.D{{"_id", "u"}}, bson.D{{"$set", bson.D{{"v", 1}}}}, upsert)
	must(err, "upsert")
	check(r.UpsertedID == "u" && r.MatchedCount == 0, "upsert %+v", r)
	r, err = items.UpdateOne(ctx, bson.D{{"_id", "u"}}, bson.D{{"$set", bson.D{{"v", 1}}}}, upsert)
	must(err, "upsert again")
	check(r.UpsertedID == nil && r.MatchedCount == 1, "matched %+v", r)

	// aggregate: $match + $group.
	agg, err := items.Aggregate(ctx, mongo.Pipeline{
		{{"$match", bson.D{{"n", bson.D{{"$gte", 500}}}}}},
		{{"$group", bson.D{{"_id", "$parity"}, {"count", bson.D{{"$sum", 1}}}}}},
		{{"$sort", bson.D{{"_id", 1}}}},
	})
	must(err, "aggregate")
	var groups []bson.M
	must(agg.All(ctx, &groups), "aggregate results")
	want := []bson.M{{"_id": int32(0), "count": int32(250)}, {"_id": int32(1), "count": int32(250)}}
	check(reflect.DeepEqual(groups, want), "groups %v", groups)

	// The _ts TTL index through the driver's index API, a document's own ttl, exact expiry.
	command(ctx, admin, bson.D{{"reaper", "pause"}})
	command(ctx, admin, bson.D{{"reaper", "runOnce"}})
	expiring := db.Collection("expiring")
	// recipe:start
	_, err = expiring.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{"_ts", 1}},
		Options: options.Index().SetExpireAfterSeconds(10),
	})
	// recipe:end
	must(err, "create the TTL index")
	specs, err := expiring.Indexes().List(ctx)
	must(err, "listIndexes")
	var indexes []bson.M
	must(specs.All(ctx, &indexes), "read listIndexes")
	shown := false
	for _, index := range indexes {
		shown = shown || (index["name"] == "_ts_1" && index["expireAfterSeconds"] == int32(10))
	}
	check(shown, "listIndexes shows _ts_1 with expireAfterSeconds 10: %v", indexes)
	_, err = expiring.InsertMany(ctx, []interface{}{
		bson.D{{"_id", "default"}},
		bson.D{{"_id", "own"}, {"ttl", int64(20)}},
		bson.D{{"_id", "never"}, {"ttl", int32(-1)}},
	})
	must(err, "insert expiring")
	command(ctx, admin, bson.D{{"advanceClock", 9}})
	check(len(ids(ctx, expiring)) == 3, "all three at T+9: %v", ids(ctx, expiring))
	command(ctx, admin, bson.D{{"advanceClock", 1}})
	check(reflect.DeepEqual(ids(ctx, expiring), []interface{}{"never", "own"}), "T+10: %v", ids(ctx, expiring))
	command(ctx, admin, bson.D{{"advanceClock", 10}})
	check(reflect.DeepEqual(ids(ctx, expiring), []interface{}{"never"}), "T+20: %v", ids(ctx, expiring))
	reaped := command(ctx, admin, bson.D{{"reaper", "runOnce"}})["reaped"]
	check(fmt.Sprint(reaped) == "2", "reaped %v", reaped)
	command(ctx, admin, bson.D{{"reaper", "resume"}})

	// MongoDB's own TTL model: a TTL index on a date field; a document expires at its date plus
	// the index's value, at the exact second; one whose field holds no date never does.
	dated := db.Collection("dated")
	_, err = dated.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{"at", 1}},
		Options: options.Index().SetExpireAfterSeconds(10),
	})
	must(err, "create the date TTL index")
	now, ok := command(ctx, admin, bson.D{{"hello", 1}})["localTime"].(primitive.DateTime)
	check(ok, "hello's localTime is a date")
	now = primitive.DateTime(int64(now) / 1000 * 1000) // whole seconds
	_, err = dated.InsertMany(ctx, []interface{}{
		bson.D{{"_id", "dated"}, {"at", now}},
		bson.D{{"_id", "undated"}, {"at", "now"}},
	})
	must(err, "insert dated")
	specs, err = dated.Indexes().List(ctx)
	must(err, "listIndexes of dated")
	indexes = nil
	must(specs.All(ctx, &indexes), "read listIndexes of dated")
	shown = false
	for _, index := range indexes {
		shown = shown || (index["name"] == "at_1" && index["expireAfterSeconds"] == int32(10))
	}
	check(shown, "listIndexes shows at_1 with expireAfterSeconds 10: %v", indexes)
	command(ctx, admin, bson.D{{"advanceClock", 9}})
	check(reflect.DeepEqual(ids(ctx, dated), []interface{}{"dated", "undated"}), "date+9: %v", ids(ctx, dated))
	command(ctx, admin, bson.D{{"advanceClock", 1}})
	check(reflect.DeepEqual(ids(ctx, dated), []interface{}{"undated"}), "date+10: %v", ids(ctx, dated))

	// A duplicate key, with its code.
	_, err = items.InsertOne(ctx, bson.D{{"_id", 7}})
	var writeErr mongo.WriteException
	check(errors.As(err, &writeErr) && len(writeErr.WriteErrors) == 1, "duplicate accepted: %v", err)
	check(writeErr.WriteErrors[0].Code == 11000, "duplicate key code %d", writeErr.WriteErrors[0].Code)
	check(mongo.IsDuplicateKeyError(err), "IsDuplicateKeyError")

	fmt.Println("ok")
}
