// Testcontainers for Java (org.testcontainers:testcontainers, JUnit 5): mayfly for one test
// class, ready once it logs "waiting for connections". The image is built from mayfly's
// Containerfile (`podman build -t mayfly:local .`) or pulled from where you pushed it.
import com.mongodb.client.MongoClients;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;

@Testcontainers
class MayflyContainerTest {
    @Container
    static final GenericContainer<?> MAYFLY = new GenericContainer<>(DockerImageName.parse("mayfly:local"))
            .withCommand("--storage", "memory")
            .withExposedPorts(27017)
            .waitingFor(Wait.forLogMessage(".*waiting for connections.*\\n", 1));
    // Or the image's health check (`mayfly ping`): .waitingFor(Wait.forHealthcheck())

    @Test
    void pings() {
        String uri = "mongodb://" + MAYFLY.getHost() + ":" + MAYFLY.getMappedPort(27017) + "/?directConnection=true";
        try (var client = MongoClients.create(uri)) {
            client.getDatabase("admin").runCommand(new Document("ping", 1));
        }
    }
}
