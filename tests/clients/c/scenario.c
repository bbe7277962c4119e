/* The Debian-driver scenario through the C driver Debian packages (libmongoc-dev 1.23): the
 * steps tests/clients/debian_drivers.py lists, each checked. Built with
 * `cc $(pkg-config --cflags --libs libmongoc-1.0)`; the connection string comes in MAYFLY_URI.
 * The TTL index goes through the driver's index helper, mongoc_collection_create_index_with_opts
 * (deprecated since 1.23 in favour of a hand-built createIndexes command, and still what
 * applications on this driver call). Prints "ok" when every check passed; a failed check exits
 * with code 1. */
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                \
   do {                                                                 \
      if (!(cond)) {                                                    \
         fprintf (stderr, "check failed at line %d: ", __LINE__);     \
         fprintf (stderr, __VA_ARGS__);                                 \
         fprintf (stderr, "\n");                                        \
         exit (1);                                                      \
      }                                                                 \
   } while (0)

#define MUST(ok, error) CHECK ((ok), "%s", (error).message)

static mongoc_client_t *client;

/* Runs an admin command and returns its reply (to be destroyed). */
static bson_t *
admin_command (bson_t *cmd)
{
   bson_error_t error;
   bson_t *reply = bson_new ();
   bool ok = mongoc_client_command_simple (client, "admin", cmd, NULL, reply, &error);
   MUST (ok, error);
   bson_destroy (cmd);
   return reply;
}

/* The ids of a collection's documents in _id order, joined by commas (strings only). */
static void
string_ids (mongoc_collection_t *c, char *out, size_t size)
{
   bson_t *filter = bson_new ();
   bson_t *opts = BCON_NEW ("sort", "{", "_id", BCON_INT32 (1), "}");
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts (c, filter, opts, NULL);
   const bson_t *doc;
   bson_iter_t iter;
   bson_error_t error;
   out[0] = '\0';
   while (mongoc_cursor_next (cursor, &doc)) {
      CHECK (bson_iter_init_find (&iter, doc, "_id") && BSON_ITER_HOLDS_UTF8 (&iter), "string _id");
      if (out[0] != '\0') {
         strncat (out, ",", size - strlen (out) - 1);
      }
      strncat (out, bson_iter_utf8 (&iter, NULL), size - strlen (out) - 1);
   }
   MUST (!mongoc_cursor_error (cursor, &error), error);
   mongoc_cursor_destroy (cursor);
   bson_destroy (opts);
   bson_destroy (filter);
}

static int64_t
number (const bson_t *doc, const char *key)
{
   bson_iter_t iter;
   CHECK (bson_iter_init_find (&iter, doc, key) && BSON_ITER_HOLDS_NUMBER (&iter), "number %s", key);
   return bson_iter_as_int64 (&iter);
}

int
main (void)
{
   bson_error_t error;
   bson_t reply;
   bson_t *doc;
   bool ok;
   char ids[256];
   const char *uri = getenv ("MAYFLY_URI");

   mongoc_init ();
   CHECK (uri != NULL, "MAYFLY_URI is not set");
   client = mongoc_client_new (uri);
   CHECK (client != NULL, "bad connection string %s", uri);
   mongoc_database_t *db = mongoc_client_get_database (client, "drivers_c");
   MUST (mongoc_database_drop (db, &error) || error.code == 26, error);

   /* CRUD, on a collection created through the driver. */
   mongoc_collection_t *items = mongoc_database_create_collection (db, "items", NULL, &error);
   MUST (items != NULL, error);
   doc = BCON_NEW ("_id", BCON_INT32 (1), "name", "one");
   MUST (mongoc_collection_insert_one (items, doc, NULL, NULL, &error), error);
   bson_destroy (doc);
   bson_t *selector = BCON_NEW ("_id", BCON_INT32 (1));
   bson_t *update = BCON_NEW ("$set", "{", "name", "uno", "}");
   MUST (mongoc_collection_update_one (items, selector, update, NULL, &reply, &error), error);
   CHECK (number (&reply, "matchedCount") == 1 && number (&reply, "modifiedCount") == 1, "update");
   bson_destroy (&reply);
   bson_destroy (update);
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts (items, selector, NULL, NULL);
   const bson_t *found;
   bson_iter_t iter;
   CHECK (mongoc_cursor_next (cursor, &found), "find the updated document");
   CHECK (bson_iter_init_find (&iter, found, "name") && strcmp (bson_iter_utf8 (&iter, NULL), "uno") == 0,
          "updated name");
   mongoc_cursor_destroy (cursor);
   MUST (mongoc_collection_delete_one (items, selector, NULL, &reply, &error), error);
   CHECK (number (&reply, "deletedCount") == 1, "delete");
   bson_destroy (&reply);
   bson_destroy (selector);
   bson_t *all = bson_new ();
   CHECK (mongoc_collection_count_documents (items, all, NULL, NULL, NULL, &error) == 0, "empty");

   /* A cursor over 1,000 documents in batches of 50. */
   bson_t *many[1000];
   for (int i = 0; i < 1000; i++) {
      many[i] = BCON_NEW ("_id", BCON_INT32 (i), "n", BCON_INT32 (i), "parity", BCON_INT32 (i % 2));
   }
   MUST (mongoc_collection_insert_many (items, (const bson_t **) many, 1000, NULL, NULL, &error), error);
   for (int i = 0; i < 1000; i++) {
      bson_destroy (many[i]);
   }
   bson_t *opts = BCON_NEW ("sort", "{", "_id", BCON_INT32 (1), "}", "batchSize", BCON_INT32 (50));
   cursor = mongoc_collection_find_with_opts (items, all, opts, NULL);
   int seen = 0;
   while (mongoc_cursor_next (cursor, &found)) {
      CHECK (number (found, "_id") == seen, "cursor order at %d", seen);
      seen++;
   }
   MUST (!mongoc_cursor_error (cursor, &error), error);
   CHECK (seen == 1000, "cursor saw %d", seen);
   mongoc_cursor_destroy (cursor);
   bson_destroy (opts);

   /* An upsert, then the same update matching the upserted document. */
   selector = BCON_NEW ("_id", "u");
   update = BCON_NEW ("$set", "{", "v", BCON_INT32 (1), "}");
   opts = BCON_NEW ("upsert", BCON_BOOL (true));
   MUST (mongoc_collection_update_one (items, selector, update, opts, &reply, &error), error);
   CHECK (number (&reply, "upsertedCount") == 1 && number (&reply, "matchedCount") == 0, "upsert");
   bson_destroy (&reply);
   MUST (mongoc_collection_update_one (items, selector, update, opts, &reply, &error), error);
   CHECK (number (&reply, "upsertedCount") == 0 && number (&reply, "matchedCount") == 1, "matched");
   bson_destroy (&reply);
   bson_destroy (opts);
   bson_destroy (update);
   bson_destroy (selector);

   /* aggregate: $match + $group. */
   bson_t *pipeline = BCON_NEW ("pipeline", "[",
                                "{", "$match", "{", "n", "{", "$gte", BCON_INT32 (500), "}", "}", "}",
                                "{", "$group", "{", "_id", "$parity", "count", "{", "$sum", BCON_INT32 (1), "}", "}", "}",
                                "{", "$sort", "{", "_id", BCON_INT32 (1), "}", "}",
                                "]");
   cursor = mongoc_collection_aggregate (items, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
   int groups = 0;
   while (mongoc_cursor_next (cursor, &found)) {
      CHECK (number (found, "_id") == groups && number (found, "count") == 250, "group %d", groups);
      groups++;
   }
   MUST (!mongoc_cursor_error (cursor, &error), error);
   CHECK (groups == 2, "%d groups", groups);
   mongoc_cursor_destroy (cursor);
   bson_destroy (pipeline);

   /* The _ts TTL index through the driver's index helper, a document's own ttl, exact expiry. */
   bson_destroy (admin_command (BCON_NEW ("reaper", "pause")));
   bson_destroy (admin_command (BCON_NEW ("reaper", "runOnce")));
   mongoc_collection_t *expiring = mongoc_database_get_collection (db, "expiring");
   bson_t *keys = BCON_NEW ("_ts", BCON_INT32 (1));
   mongoc_index_opt_t index_opt;
   mongoc_index_opt_init (&index_opt);
   index_opt.expire_after_seconds = 10;
   ok = mongoc_collection_create_index_with_opts (expiring, keys, &index_opt, NULL, NULL, &error);
   MUST (ok, error);
   bson_destroy (keys);
   cursor = mongoc_collection_find_indexes_with_opts (expiring, NULL);
   bool shown = false;
   while (mongoc_cursor_next (cursor, &found)) {
      shown |= bson_iter_init_find (&iter, found, "name") && strcmp (bson_iter_utf8 (&iter, NULL), "_ts_1") == 0 &&
               number (found, "expireAfterSeconds") == 10;
   }
   MUST (!mongoc_cursor_error (cursor, &error), error);
   CHECK (shown, "listIndexes shows _ts_1 with expireAfterSeconds 10");
   mongoc_cursor_destroy (cursor);
   bson_t *expiring_docs[3] = {
      BCON_NEW ("_id", "default"),
      BCON_NEW ("_id", "own", "ttl", BCON_INT64 (20)),
      BCON_NEW ("_id", "never", "ttl", BCON_INT32 (-1)),
   };
   MUST (mongoc_collection_insert_many (expiring, (const bson_t **) expiring_docs, 3, NULL, NULL, &error), error);
   for (int i = 0; i < 3; i++) {
      bson_destroy (expiring_docs[i]);
   }
   bson_destroy (admin_command (BCON_NEW ("advanceClock", BCON_INT32 (9))));
   string_ids (expiring, ids, sizeof ids);
   CHECK (strcmp (ids, "default,never,own") == 0, "all three at T+9: %s", ids);
   bson_destroy (admin_command (BCON_NEW ("advanceClock", BCON_INT32 (1))));
   string_ids (expiring, ids, sizeof ids);
   CHECK (strcmp (ids, "never,own") == 0, "T+10: %s", ids);
   bson_destroy (admin_command (BCON_NEW ("advanceClock", BCON_INT32 (10))));
   string_ids (expiring, ids, sizeof ids);
   CHECK (strcmp (ids, "never") == 0, "T+20: %s", ids);
   bson_t *reaped = admin_command (BCON_NEW ("reaper", "runOnce"));
   CHECK (number (reaped, "reaped") == 2, "reaped");
   bson_destroy (reaped);
   bson_destroy (admin_command (BCON_NEW ("reaper", "resume")));

   /* A duplicate key, with its code. */
   doc = BCON_NEW ("_id", BCON_INT32 (7));
   ok = mongoc_collection_insert_one (items, doc, NULL, &reply, &error);
   CHECK (!ok, "duplicate _id accepted");
   CHECK (error.code == 11000, "duplicate key code %u: %s", error.code, error.message);
   bson_destroy (&reply);
   bson_destroy (doc);

   bson_destroy (all);
   mongoc_collection_destroy (expiring);
   mongoc_collection_destroy (items);
   mongoc_database_destroy (db);
   mongoc_client_destroy (client);
   mongoc_cleanup ();
   printf ("ok\n");
   return 0;
}
