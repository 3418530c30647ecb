// store_sqlite_db_test.cpp — the RAII layer over SQLite (store/sqlite_db.h, internal to core):
// transactions roll back unless committed, errors name the statement and the file, a lock says so.
#include <gtest/gtest.h>

#include "store/src/sqlite_db.h"  // the RAII layer is internal to core; tested here too
#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

TEST_F(StoreTest, TransactionRollsBackUnlessCommitted) {
    Database db(m_path);
    db.exec("CREATE TABLE t(x INTEGER)");
    {
        Transaction tx(db);
        db.exec("INSERT INTO t VALUES(1)");
    }
    EXPECT_EQ(db.queryInt("SELECT count(*) FROM t"), 0);
    {
        Transaction tx(db);
        db.exec("INSERT INTO t VALUES(1)");
        tx.commit();
    }
    EXPECT_EQ(db.queryInt("SELECT count(*) FROM t"), 1);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { Statement st(db, "SELECT nope FROM t"); }, &msg),
              ErrorCode::Database);
    EXPECT_NE(msg.find("SELECT nope FROM t"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m_path), std::string::npos) << msg;
}

TEST_F(StoreTest, LockedDatabaseGivesAClearError) {
    { RunStore s(m_path); }
    Database holder(m_path);
    Transaction lock(holder);  // holds the write lock
    holder.exec("INSERT INTO runs(name) VALUES('holder')");
    Database impatient(m_path, /*busyTimeoutMs=*/50);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { Transaction tx(impatient); }, &msg), ErrorCode::Database);
    EXPECT_NE(msg.find("locked"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m_path), std::string::npos) << msg;
    // Reading alongside the writer still works: that is what WAL is for.
    EXPECT_EQ(impatient.queryInt("SELECT count(*) FROM runs"), 0);
}
